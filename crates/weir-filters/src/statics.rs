//! Header names and values a filter sends with every request, made `'static` once.
//!
//! A `HeaderName` or `HeaderValue` built at run time shares its bytes through a reference
//! count that every clone and drop changes. The worker threads clone the same filter's names
//! and values for every request, so that count's cache line would move between CPUs several
//! times per request; a `'static` one is cloned by copying a pointer. So the names and fixed
//! values filters are built with are kept for the life of the process, each distinct string
//! once. Past [`BUDGET`] bytes (a config churned through the API with ever new values) they
//! are built as before: slower to clone, never a leak without bound.

use std::collections::HashSet;
use std::sync::Mutex;

use http::{HeaderName, HeaderValue};

/// The most bytes ever kept.
const BUDGET: usize = 1 << 20;

struct Kept {
    strings: HashSet<&'static str>,
    bytes: usize,
}

static KEPT: Mutex<Option<Kept>> = Mutex::new(None);

/// `s` for the life of the process, if it is or can still be kept.
fn keep(s: &str) -> Option<&'static str> {
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    let kept = kept.get_or_insert_with(|| Kept {
        strings: HashSet::new(),
        bytes: 0,
    });
    if let Some(k) = kept.strings.get(s) {
        return Some(k);
    }
    if kept.bytes + s.len() > BUDGET {
        return None;
    }
    kept.bytes += s.len();
    let k: &'static str = Box::leak(s.into());
    kept.strings.insert(k);
    Some(k)
}

/// A header name; `None` if `s` is not one.
pub fn name(s: &str) -> Option<HeaderName> {
    let made = HeaderName::from_bytes(s.as_bytes()).ok()?;
    // from_bytes made it lower case, as from_static wants it.
    Some(keep(made.as_str()).map_or(made, HeaderName::from_static))
}

/// A header value; `None` if `s` is not one.
pub fn value(s: &str) -> Option<HeaderValue> {
    let made = HeaderValue::from_str(s).ok()?;
    // from_static takes visible ASCII only; from_str also takes other bytes.
    if !s.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b)) {
        return Some(made);
    }
    Some(keep(s).map_or(made, HeaderValue::from_static))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_once_and_checked() {
        let a = name("x-kept").unwrap();
        assert_eq!(a, name("x-kept").unwrap());
        assert_eq!(name("X-Upper").unwrap().as_str(), "x-upper");
        assert!(name("bad name").is_none());
        assert_eq!(value("v 1").unwrap(), "v 1");
        assert_eq!(
            value("caf\u{e9}").unwrap().as_bytes(),
            "caf\u{e9}".as_bytes()
        );
        assert!(value("a\r\nb").is_none());
        let p = keep("same").unwrap().as_ptr();
        assert_eq!(keep("same").unwrap().as_ptr(), p);
    }
}
