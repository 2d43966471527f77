//! A request path in normal form, before routing, filters and the upstream see it
//! (`[listeners.NAME] merge_slashes`, `escaped_slashes`).
//!
//! Routes and filters match paths byte for byte, and backends resolve `..` and `%61` in
//! their own way: if weir matched the raw path, `/open/../admin/` would pass an allow list on
//! `/admin/` and reach the admin backend. So weir matches, filters and forwards one form, as
//! nginx does and Envoy's `normalize_path` offers:
//!
//! 1. percent-encodings of unreserved characters (`A-Z a-z 0-9 - . _ ~`) decoded (RFC 3986
//!    §6.2.2.2), every other encoding written with upper-case hex (§6.2.2.1), a `%` not
//!    followed by two hex digits refused; an encoded slash (`%2F`) kept, refused or decoded
//!    as the listener says ([`EscapedSlashes`]);
//! 2. runs of `/` merged into one (unless `merge_slashes = false`);
//! 3. `.` and `..` segments removed (RFC 3986 §5.2.4); a `..` that would climb above the root
//!    is refused, not clamped: no honest client sends one.
//!
//! The query is never touched. Written by hand: it is a few lines of RFC 3986, on every
//! request's path, and must not allocate for a path that is already normal.

use std::fmt;

/// What an encoded slash (`%2F`) in a path becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EscapedSlashes {
    /// Left encoded: `/a%2Fb` is one segment, routed and forwarded as such (Envoy's
    /// `KEEP_UNCHANGED`).
    #[default]
    Keep,
    /// The request is refused with 400.
    Reject,
    /// Decoded to `/` before slashes are merged and dot segments removed, so `/a%2F..%2Fb`
    /// is `/b` (Envoy's `UNESCAPE_AND_FORWARD`).
    Decode,
}

/// A listener's path rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathRules {
    pub merge_slashes: bool,
    pub escaped_slashes: EscapedSlashes,
}

impl Default for PathRules {
    fn default() -> PathRules {
        PathRules {
            merge_slashes: true,
            escaped_slashes: EscapedSlashes::Keep,
        }
    }
}

/// Why a path was refused (answered 400).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PathError {
    /// A `..` segment climbs above the root.
    AboveRoot,
    /// A `%` not followed by two hex digits.
    BadEscape,
    /// An encoded slash, with `escaped_slashes = "reject"`.
    EscapedSlash,
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PathError::AboveRoot => "a `..` segment climbs above the root",
            PathError::BadEscape => "a `%` is not followed by two hex digits",
            PathError::EscapedSlash => "an encoded slash (%2F), refused by escaped_slashes",
        })
    }
}

/// `path` in normal form: `Ok(None)` when it already is (no allocation), else the new path.
/// A path that does not start with `/` (`*`) is left as it is.
#[inline]
pub fn normalize(path: &str, rules: PathRules) -> Result<Option<String>, PathError> {
    let b = path.as_bytes();
    if b.first() != Some(&b'/') || !needs_work(b, rules.merge_slashes) {
        return Ok(None);
    }
    let decoded = decode(b, rules.escaped_slashes)?;
    let out = remove_dots(&decoded, rules.merge_slashes)?;
    Ok((out != path).then_some(out))
}

/// Whether the path may change: a `%`, a `//` (when merging), or a segment starting with `.`.
/// Eight bytes at a time (every request's path passes here; a normal one is a few loads and
/// masks, where a byte loop cost ~80 instructions for `/small`).
#[inline]
fn needs_work(b: &[u8], merge_slashes: bool) -> bool {
    // `/` at the end of the previous chunk, as byte 0's mark of this one.
    let mut carry = 0u64;
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        let x = u64::from_le_bytes(c.try_into().expect("eight bytes"));
        if chunk_needs_work(x, &mut carry, merge_slashes) {
            return true;
        }
    }
    let rest = chunks.remainder();
    if rest.is_empty() {
        return false;
    }
    // Padded with zeros, which are none of the bytes looked for.
    let mut last = [0u8; 8];
    last[..rest.len()].copy_from_slice(rest);
    chunk_needs_work(u64::from_le_bytes(last), &mut carry, merge_slashes)
}

#[inline]
fn chunk_needs_work(x: u64, carry: &mut u64, merge_slashes: bool) -> bool {
    let slash = bytes_equal(x, b'/');
    // Bytes right after a `/` (byte k + 1's mark from byte k's, little-endian).
    let after_slash = (slash << 8) | *carry;
    *carry = slash >> 56;
    let mut follows = bytes_equal(x, b'.');
    if merge_slashes {
        follows |= slash;
    }
    (bytes_equal(x, b'%') | (after_slash & follows)) != 0
}

/// The high bit of each byte of `x` that equals `c`, exactly (no borrow between bytes).
#[inline]
fn bytes_equal(x: u64, c: u8) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let y = x ^ (0x0101_0101_0101_0101 * c as u64);
    !(((y & LOW7) + LOW7) | y | LOW7)
}

/// Step 1: percent-encodings decoded or made upper-case.
fn decode(b: &[u8], slashes: EscapedSlashes) -> Result<String, PathError> {
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c != b'%' {
            out.push(c as char);
            i += 1;
            continue;
        }
        let (Some(h), Some(l)) = (
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) else {
            return Err(PathError::BadEscape);
        };
        let v = h << 4 | l;
        match v {
            b'/' => match slashes {
                EscapedSlashes::Keep => out.push_str("%2F"),
                EscapedSlashes::Reject => return Err(PathError::EscapedSlash),
                EscapedSlashes::Decode => out.push('/'),
            },
            _ if is_unreserved(v) => out.push(v as char),
            _ => {
                out.push('%');
                out.push(HEX[(v >> 4) as usize] as char);
                out.push(HEX[(v & 15) as usize] as char);
            }
        }
        i += 3;
    }
    Ok(out)
}

/// Steps 2 and 3 on a path that starts with `/`.
fn remove_dots(path: &str, merge_slashes: bool) -> Result<String, PathError> {
    let mut segments: Vec<&str> = Vec::new();
    // Whether the result ends with `/` after its last segment: a path ending in `/`, `/.`
    // or `/..` names a directory (RFC 3986 §5.2.4 keeps that slash).
    let mut dir = false;
    for seg in path[1..].split('/') {
        dir = true;
        match seg {
            "." => {}
            ".." => {
                if segments.pop().is_none() {
                    return Err(PathError::AboveRoot);
                }
            }
            "" if merge_slashes => {}
            s => {
                segments.push(s);
                dir = false;
            }
        }
    }
    let mut out = String::with_capacity(path.len());
    for s in &segments {
        out.push('/');
        out.push_str(s);
    }
    if segments.is_empty() || dir {
        out.push('/');
    }
    Ok(out)
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

fn is_unreserved(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(path: &str) -> Result<String, PathError> {
        with(path, PathRules::default())
    }

    fn with(path: &str, rules: PathRules) -> Result<String, PathError> {
        Ok(normalize(path, rules)?.unwrap_or_else(|| path.to_string()))
    }

    #[test]
    fn normal_paths_are_left_alone_without_allocating() {
        for p in [
            "/",
            "/a",
            "/a/b/",
            "/index.html",
            "/a.b/c..d/...",
            "*",
            "/a-b_c~d",
        ] {
            assert_eq!(normalize(p, PathRules::default()), Ok(None), "{p}");
        }
        // Looked at (a segment starting with `.`), found normal.
        assert_eq!(normalize("/.well-known/x", PathRules::default()), Ok(None));
    }

    #[test]
    fn dot_segments_are_removed() {
        assert_eq!(n("/n/x/../admin/secret").unwrap(), "/n/admin/secret");
        assert_eq!(n("/n/./admin").unwrap(), "/n/admin");
        assert_eq!(n("/a/b/..").unwrap(), "/a/");
        assert_eq!(n("/a/b/.").unwrap(), "/a/b/");
        assert_eq!(n("/a/..").unwrap(), "/");
        assert_eq!(n("/.").unwrap(), "/");
        assert_eq!(n("/a/.../b").unwrap(), "/a/.../b");
        assert_eq!(n("/a/..b/c").unwrap(), "/a/..b/c");
    }

    #[test]
    fn climbing_above_the_root_is_refused() {
        for p in [
            "/..",
            "/../a",
            "/a/../..",
            "/a/../../b",
            "/%2e%2e/x",
            "/.%2E/x",
        ] {
            assert_eq!(
                normalize(p, PathRules::default()),
                Err(PathError::AboveRoot),
                "{p}"
            );
        }
    }

    #[test]
    fn slashes_are_merged_unless_the_listener_says_not() {
        assert_eq!(n("//n//admin///x").unwrap(), "/n/admin/x");
        assert_eq!(n("/a//").unwrap(), "/a/");
        assert_eq!(n("//").unwrap(), "/");
        let keep = PathRules {
            merge_slashes: false,
            ..PathRules::default()
        };
        assert_eq!(normalize("/a//b", keep), Ok(None));
        assert_eq!(with("/a//b/./c", keep).unwrap(), "/a//b/c");
        assert_eq!(with("//a/", keep).unwrap(), "//a/");
        // RFC 3986 §5.2.4: `..` removes the empty segment before it.
        assert_eq!(with("/a//../b", keep).unwrap(), "/a/b");
        assert_eq!(with("/a//..", keep).unwrap(), "/a/");
        assert_eq!(with("/a/b//.", keep).unwrap(), "/a/b//");
    }

    #[test]
    fn unreserved_escapes_are_decoded_and_others_upper_cased() {
        assert_eq!(n("/n/%61dmin/secret").unwrap(), "/n/admin/secret");
        assert_eq!(n("/%7Euser/%2D%5F%2e").unwrap(), "/~user/-_.");
        assert_eq!(n("/a%20b%3f%c3%a9").unwrap(), "/a%20b%3F%C3%A9");
        // One decoding only: `%25` is `%` itself, kept encoded.
        assert_eq!(n("/%252e%252e/x").unwrap(), "/%252e%252e/x");
        // Decoded dots form dot segments.
        assert_eq!(n("/n/x/%2E%2E/admin").unwrap(), "/n/admin");
    }

    #[test]
    fn a_bad_escape_is_refused() {
        for p in ["/a%", "/a%2", "/a%zz", "/a%2g/b"] {
            assert_eq!(
                normalize(p, PathRules::default()),
                Err(PathError::BadEscape),
                "{p}"
            );
        }
    }

    #[test]
    fn encoded_slashes_are_kept_refused_or_decoded() {
        assert_eq!(n("/a%2fb/../c").unwrap(), "/c");
        assert_eq!(n("/a%2Fb").unwrap(), "/a%2Fb");
        assert_eq!(n("/x/..%2F..%2Fadmin").unwrap(), "/x/..%2F..%2Fadmin");
        let reject = PathRules {
            escaped_slashes: EscapedSlashes::Reject,
            ..PathRules::default()
        };
        assert_eq!(normalize("/a%2Fb", reject), Err(PathError::EscapedSlash));
        let decode = PathRules {
            escaped_slashes: EscapedSlashes::Decode,
            ..PathRules::default()
        };
        assert_eq!(with("/n/x%2F..%2Fadmin", decode).unwrap(), "/n/admin");
        assert_eq!(with("/a%2F%2Fb", decode).unwrap(), "/a/b");
        assert_eq!(normalize("/%2F..%2F..", decode), Err(PathError::AboveRoot));
    }

    /// Random paths over the characters that matter (`/`, `.`, `%`, hex digits): whatever
    /// comes out starts with `/`, has no dot segment, no `//` when merging, no lower-case or
    /// broken escape and no escaped unreserved character, and is its own normal form.
    #[test]
    fn every_output_is_normal() {
        const CHARS: &[u8] = b"//..%%2eEfF5a1~-_";
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for rules in [
            PathRules::default(),
            PathRules {
                merge_slashes: false,
                escaped_slashes: EscapedSlashes::Keep,
            },
            PathRules {
                merge_slashes: true,
                escaped_slashes: EscapedSlashes::Decode,
            },
        ] {
            for _ in 0..50_000 {
                let len = 1 + next(12);
                let mut p = String::from("/");
                for _ in 0..len {
                    p.push(CHARS[next(CHARS.len())] as char);
                }
                let Ok(out) = with(&p, rules) else { continue };
                assert!(out.starts_with('/'), "{p} -> {out}");
                let segs: Vec<&str> = out[1..].split('/').collect();
                assert!(
                    !segs.contains(&".") && !segs.contains(&".."),
                    "{p} -> {out}"
                );
                if rules.merge_slashes {
                    assert!(!out.contains("//"), "{p} -> {out}");
                }
                let b = out.as_bytes();
                for (i, _) in out.match_indices('%') {
                    let (h, l) = (b[i + 1], b[i + 2]);
                    assert!(
                        h.is_ascii_hexdigit() && l.is_ascii_hexdigit(),
                        "{p} -> {out}"
                    );
                    assert!(
                        !h.is_ascii_lowercase() && !l.is_ascii_lowercase(),
                        "{p} -> {out}"
                    );
                    let v = hex(h).unwrap() << 4 | hex(l).unwrap();
                    assert!(!is_unreserved(v), "{p} -> {out}");
                }
                assert_eq!(normalize(&out, rules), Ok(None), "{p} -> {out}");
            }
        }
    }

    /// The eight-bytes-at-a-time look finds exactly what a byte loop finds.
    #[test]
    fn the_fast_look_matches_a_byte_loop() {
        fn slow(b: &[u8], merge: bool) -> bool {
            b.windows(2)
                .any(|w| w[0] == b'/' && (w[1] == b'.' || (merge && w[1] == b'/')))
                || b.contains(&b'%')
        }
        const CHARS: &[u8] = b"/./a%$.-/\x2e\x2f\x00\xff";
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 23) as usize;
            let p: Vec<u8> = (0..len)
                .map(|i| CHARS[((seed >> (i % 16 * 4)) % CHARS.len() as u64) as usize])
                .collect();
            for merge in [true, false] {
                assert_eq!(needs_work(&p, merge), slow(&p, merge), "{p:?} {merge}");
            }
        }
    }

    /// Normal form is a fixed point: normalising twice changes nothing more.
    #[test]
    fn normalising_twice_changes_nothing() {
        let parts = ["a", ".", "..", "", "%2e", "%2F", "%41", "%7e", "b%20"];
        for rules in [
            PathRules::default(),
            PathRules {
                merge_slashes: false,
                escaped_slashes: EscapedSlashes::Decode,
            },
        ] {
            for x in parts {
                for y in parts {
                    for z in parts {
                        let p = format!("/{x}/{y}/{z}");
                        if let Ok(once) = with(&p, rules) {
                            assert_eq!(normalize(&once, rules), Ok(None), "{p} -> {once}");
                        }
                    }
                }
            }
        }
    }
}
