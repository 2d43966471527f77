//! A path regex and its replacement (`path_regex`, `path_replacement`), shared by rewrite and
//! redirect. The `regex` crate matches in linear time; the compiled program is bounded too, so
//! no pattern costs weir more than `MAX_PROGRAM` of memory per use.

use ::regex::{Regex, RegexBuilder};

use crate::read::{self, Fields, Sink};

/// The longest pattern taken, in bytes.
pub const MAX_PATTERN: usize = 1024;
/// The most memory one compiled pattern (and its lazy DFA) may take.
pub const MAX_PROGRAM: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRegex {
    pub pattern: String,
    /// `$1`, `${name}` stand for captures; `$$` for a dollar.
    pub replacement: String,
}

impl PathRegex {
    /// The pattern compiled, with its replacement taken apart: what a filter runs.
    pub fn compiled(&self) -> Result<(Regex, Replacement), String> {
        let re = Self::compile(&self.pattern)?;
        let with = Replacement::parse(&re, &self.replacement)?;
        Ok((re, with))
    }

    /// The compiled pattern, with the limits every user of it must apply.
    pub fn compile(pattern: &str) -> Result<Regex, String> {
        if pattern.len() > MAX_PATTERN {
            return Err(format!(
                "the pattern is {} bytes; at most {MAX_PATTERN} are taken",
                pattern.len()
            ));
        }
        RegexBuilder::new(pattern)
            .size_limit(MAX_PROGRAM)
            .dfa_size_limit(MAX_PROGRAM)
            .build()
            .map_err(|e| match e {
                ::regex::Error::CompiledTooBig(_) => format!(
                    "the pattern compiles to more than {} KiB; make it simpler",
                    MAX_PROGRAM / 1024
                ),
                e => e.to_string(),
            })
    }
}

/// Reads `path_regex` with `path_replacement` (both or neither).
pub(super) fn read(sink: &mut Sink<'_>, t: &Fields<'_, '_>) -> Option<PathRegex> {
    let pat = t.get("path_regex");
    let rep = t.get("path_replacement");
    let (pat, rep) = match (pat, rep) {
        (None, None) => return None,
        (Some(p), Some(r)) => (p, r),
        (Some(p), None) => {
            sink.error(
                p.span(),
                "path_regex needs a path_replacement, e.g. \"/new/$1\"",
            );
            return None;
        }
        (None, Some(r)) => {
            sink.error(r.span(), "path_replacement needs a path_regex to match");
            return None;
        }
    };
    let p = read::string(sink, pat)?;
    let r = read::string(sink, rep)?;
    let re = match PathRegex::compile(p) {
        Ok(re) => re,
        Err(e) => {
            sink.error(pat.span(), format!("invalid path_regex: {e}"));
            return None;
        }
    };
    if let Err(e) = Replacement::parse(&re, r) {
        sink.error(rep.span(), format!("invalid path_replacement {r:?}: {e}"));
        return None;
    }
    Some(PathRegex {
        pattern: p.to_string(),
        replacement: r.to_string(),
    })
}

/// A `path_replacement` taken apart once, at load: its text and the captures it names, by
/// index. `Regex::replace` would parse the `$` references again on every request (a third of
/// a rewrite's cost), and quietly put nothing where a name is not a capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement(Vec<Piece>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Capture(usize),
}

impl Replacement {
    /// Every `$N` / `${name}` must name a capture of `re` (`$$` is a dollar; a name runs as
    /// far as letters, digits and `_` go, as the `regex` crate reads it), and the text must
    /// be what a path may hold.
    pub fn parse(re: &Regex, r: &str) -> Result<Replacement, String> {
        if let Some(c) = r.chars().find(|c| {
            c.is_whitespace() || c.is_control() || matches!(c, '?' | '#') || !c.is_ascii()
        }) {
            return Err(format!("{c:?} cannot be in a path"));
        }
        let mut pieces = Vec::new();
        let mut text = String::new();
        let mut rest = r;
        while let Some(i) = rest.find('$') {
            text.push_str(&rest[..i]);
            let tail = &rest[i + 1..];
            if let Some(t) = tail.strip_prefix('$') {
                text.push('$');
                rest = t;
                continue;
            }
            let (name, after) = match tail.strip_prefix('{') {
                Some(t) => match t.find('}') {
                    Some(end) => (&t[..end], &t[end + 1..]),
                    None => return Err("`${` without its `}`".into()),
                },
                None => {
                    let end = tail
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(tail.len());
                    if end == 0 {
                        return Err("a lone `$`: write `$$` for a dollar".into());
                    }
                    (&tail[..end], &tail[end..])
                }
            };
            let index = match name.parse::<usize>() {
                Ok(n) => (n < re.captures_len()).then_some(n),
                Err(_) => re.capture_names().position(|n| n == Some(name)),
            };
            let Some(index) = index else {
                return Err(format!(
                    "`${name}` is not a capture of path_regex (its numbered groups: {}{})",
                    re.captures_len() - 1,
                    match re.capture_names().flatten().collect::<Vec<_>>() {
                        names if names.is_empty() => String::new(),
                        names => format!(", named: {}", names.join(", ")),
                    }
                ));
            };
            if !text.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut text)));
            }
            pieces.push(Piece::Capture(index));
            rest = after;
        }
        text.push_str(rest);
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        Ok(Replacement(pieces))
    }

    /// `s` with `re`'s first match replaced (what `Regex::replace` gives), or `None` when
    /// `re` does not match. A capture that took part in no match stands for nothing.
    pub fn apply(&self, re: &Regex, s: &str) -> Option<String> {
        let mut locs = re.capture_locations();
        let whole = re.captures_read(&mut locs, s)?;
        let mut out = String::with_capacity(s.len() + 16);
        out.push_str(&s[..whole.start()]);
        for p in &self.0 {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Capture(i) => {
                    if let Some((a, b)) = locs.get(*i) {
                        out.push_str(&s[a..b]);
                    }
                }
            }
        }
        out.push_str(&s[whole.end()..]);
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever the replacement, `apply` gives what `Regex::replace` gives.
    #[test]
    fn apply_replaces_as_the_regex_crate_does() {
        let cases = [
            ("^/old/(?P<rest>.*)$", "/new/${rest}", "/old/a/b"),
            ("^/(small)$", "/$1", "/small"),
            ("/v(\\d+)/", "/version-$1/$$/", "/api/v2/x/v3/"),
            ("^/a(x)?/(.*)$", "/$1-$2-$0", "/a/rest"),
            (
                "^/(?P<a>[a-z]+)-(?P<b>[a-z]+)$",
                "/${b}_${a}/$a$b",
                "/left-right",
            ),
            ("^/nomatch$", "/x", "/other"),
        ];
        for (pattern, with, path) in cases {
            let re = PathRegex::compile(pattern).unwrap();
            let parsed = Replacement::parse(&re, with).unwrap();
            let want = re
                .is_match(path)
                .then(|| re.replace(path, with).into_owned());
            assert_eq!(parsed.apply(&re, path), want, "{pattern} {with} {path}");
        }
    }

    #[test]
    fn replacements_name_captures_that_exist() {
        let re = PathRegex::compile("^/old/(?P<rest>.*)$").unwrap();
        assert!(Replacement::parse(&re, "/new/$1").is_ok());
        assert!(Replacement::parse(&re, "/new/${rest}x").is_ok());
        assert!(Replacement::parse(&re, "/$$/$0").is_ok());
        assert!(Replacement::parse(&re, "/new/$2")
            .unwrap_err()
            .contains("numbered groups: 1"));
        assert!(Replacement::parse(&re, "/new/$").is_err());
        assert!(Replacement::parse(&re, "/new/$rests").is_err());
        assert!(Replacement::parse(&re, "/a b").is_err());
        assert!(PathRegex::compile(&"a".repeat(2000)).is_err());
        assert!(PathRegex::compile("(\\w{100}){100}")
            .unwrap_err()
            .contains("KiB"));
    }
}
