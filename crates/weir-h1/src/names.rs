//! Field names as HTTP/1 heads spell them, made `HeaderName`s through a small per-thread
//! cache. A peer spells the same names the same way message after message (an nginx
//! upstream's `Content-Type` and `Content-Length`, a browser's `Accept-Language`), and
//! `HeaderName::from_bytes` lower-cases and matches each one again: ~100 instructions a
//! name in callgrind, where a hit here is one compare of the spelling and a clone. The
//! http crate keeps no such cache, so it is written here.
//!
//! Keyed by the exact bytes: a hit is a name `from_bytes` already accepted in that
//! spelling. A slot holds one name and the last to come replaces it, so a peer sending
//! many different names only falls back to `from_bytes`, and what is kept stays bounded
//! (64 names of at most 32 bytes per thread).

use std::cell::RefCell;

use http::header::{HeaderName, InvalidHeaderName};

const SLOTS: usize = 64;
/// Longer names are made each time (they are rare, and the cache keeps spellings inline).
const LONGEST: usize = 32;

struct Slot {
    len: u8,
    raw: [u8; LONGEST],
    name: HeaderName,
}

thread_local! {
    static CACHE: RefCell<[Option<Slot>; SLOTS]> = const { RefCell::new([const { None }; SLOTS]) };
}

/// `raw` as a `HeaderName`, as `HeaderName::from_bytes` makes it.
pub fn header_name(raw: &[u8]) -> Result<HeaderName, InvalidHeaderName> {
    let len = raw.len();
    if len == 0 || len > LONGEST {
        return HeaderName::from_bytes(raw);
    }
    // Length and the two end bytes tell most common names apart.
    let at = (len * 7 + usize::from(raw[0]) * 3 + usize::from(raw[len - 1])) % SLOTS;
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if let Some(s) = &c[at] {
            if usize::from(s.len) == len && s.raw[..len] == *raw {
                return Ok(s.name.clone());
            }
        }
        let name = HeaderName::from_bytes(raw)?;
        let mut kept = [0u8; LONGEST];
        kept[..len].copy_from_slice(raw);
        c[at] = Some(Slot {
            len: len as u8,
            raw: kept,
            name: name.clone(),
        });
        Ok(name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_what_from_bytes_makes_hit_or_miss() {
        let spellings: [&[u8]; 9] = [
            b"Content-Type",
            b"content-type",
            b"CONTENT-TYPE",
            b"X-Custom-Field",
            b"x-custom-field",
            b"Date",
            b"a",
            b"A-Name-Longer-Than-Thirty-Two-Bytes-Here",
            b"Vary",
        ];
        // Twice round: misses first, then hits (and slots shared by colliding names).
        for _ in 0..2 {
            for raw in spellings {
                assert_eq!(
                    header_name(raw).unwrap(),
                    HeaderName::from_bytes(raw).unwrap()
                );
            }
        }
        for bad in [&b""[..], b"bad name", b"bad\xffname", b"(x)"] {
            assert!(header_name(bad).is_err(), "{bad:?}");
            assert!(header_name(bad).is_err(), "{bad:?}, again");
        }
    }
}
