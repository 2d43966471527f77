//! `Expect` on an HTTP/2 request (RFC 9110 §10.1.1), as weir's HTTP/1.1 server treats it:
//! `100-continue` is met with a `100` once the pipeline first reads the body (so a request
//! refused before that, a `body_limit`'s 413 from `content-length`, is refused without the
//! client sending the body), and any other expectation cannot be met: `417`.

use http::header::EXPECT;
use http::HeaderMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    Nothing,
    /// `100-continue`: the client waits for a `100` (or the answer) before its DATA.
    Continue,
    /// Anything else.
    Unmet,
}

/// The expectation of a request's fields. A field the pipeline strips before the upstream
/// hop (`http::headers`): weir meets or refuses it here. Looked up only for a request whose
/// event says it has the field (`weir_h2::server::Event::Request`'s `expect`).
pub fn of(h: &HeaderMap) -> Expect {
    match h.get(EXPECT) {
        None => Expect::Nothing,
        Some(v)
            if v.as_bytes()
                .trim_ascii()
                .eq_ignore_ascii_case(b"100-continue") =>
        {
            Expect::Continue
        }
        Some(_) => Expect::Unmet,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn with(v: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(EXPECT, HeaderValue::from_static(v));
        h
    }

    #[test]
    fn only_100_continue_can_be_met() {
        assert_eq!(of(&HeaderMap::new()), Expect::Nothing);
        assert_eq!(of(&with("100-continue")), Expect::Continue);
        assert_eq!(of(&with("100-Continue ")), Expect::Continue);
        assert_eq!(of(&with("200-ok")), Expect::Unmet);
        assert_eq!(of(&with("100-continue, x")), Expect::Unmet);
    }
}
