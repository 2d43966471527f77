//! `kind = "compress"`: the response encoded with the coding the client weighs highest in
//! `Accept-Encoding` (RFC 9110 §12.5.3: q-values, `q=0` refuses, `*` for any coding not
//! named, `identity` weighed too), the filter's `encodings` order breaking ties.
//!
//! The request phase only notes what the request asked (`Asked`, in `Cx`); the response
//! phase decides. Never compressed: a HEAD, a request with `Range`, a status without a body
//! or a partial one (1xx, 204, 206, 304), weir's own answers, a response already encoded,
//! marked `Cache-Control: no-transform`, with a `Content-Range`, of a type not listed, or
//! whose Content-Length is under `min_bytes`. Every response the filter could have
//! compressed gets `Vary: Accept-Encoding`, whether or not this client's header led to it,
//! so caches keep the variants apart; an encoded one loses its Content-Length and
//! Accept-Ranges, and a strong ETag becomes weak (the bytes differ, the meaning does not).

use http::header::{
    HeaderMap, HeaderValue, ACCEPT_RANGES, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_LENGTH,
    CONTENT_RANGE, CONTENT_TYPE, ETAG, VARY,
};
use http::{Method, Request, Response, StatusCode};
use http_body::Body;
use weir_config::filter::Encoding;

use crate::asked::Asked;
use crate::cx::Cx;
use crate::kind::Kind;
use crate::verdict::{Later, Verdict};
use weir_codec::client_body::ClientBody;
use weir_http::body::ProxyBody;
use weir_http::encoded::Levels;

#[derive(Debug)]
pub struct Compress {
    /// Preference order.
    encodings: Vec<Encoding>,
    levels: Levels,
    types: Vec<MediaType>,
    min_bytes: u64,
}

#[derive(Debug)]
enum MediaType {
    /// `type/subtype`, lower-cased.
    Exact(String),
    /// `type/` of `type/*`.
    Prefix(String),
}

impl Compress {
    pub fn build(c: &weir_config::filter::Compress) -> Compress {
        Compress {
            encodings: c.encodings.clone(),
            levels: Levels {
                gzip: c.gzip_level,
                brotli: c.brotli_level,
                zstd: c.zstd_level,
            },
            types: c
                .content_types
                .iter()
                .map(|t| match t.strip_suffix('*') {
                    Some(prefix) => MediaType::Prefix(prefix.to_string()),
                    None => MediaType::Exact(t.clone()),
                })
                .collect(),
            min_bytes: c.min_bytes,
        }
    }

    /// Whether this response is one the filter compresses for a client that asks.
    fn compressible(&self, resp: &Response<ProxyBody>) -> bool {
        let s = resp.status();
        if s.is_informational()
            || matches!(
                s,
                StatusCode::NO_CONTENT | StatusCode::PARTIAL_CONTENT | StatusCode::NOT_MODIFIED
            )
            || resp.body().is_generated()
            || resp.body().is_end_stream()
        {
            return false;
        }
        let h = resp.headers();
        if h.contains_key(CONTENT_RANGE) || encoded(h) || no_transform(h) {
            return false;
        }
        if length(h).is_some_and(|n| n < self.min_bytes) {
            return false;
        }
        h.get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| self.listed(v))
    }

    fn listed(&self, content_type: &str) -> bool {
        let media = content_type.split(';').next().unwrap_or("").trim();
        self.types.iter().any(|t| match t {
            MediaType::Exact(m) => media.eq_ignore_ascii_case(m),
            MediaType::Prefix(p) => media
                .get(..p.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(p) && media.len() > p.len()),
        })
    }
}

impl Kind for Compress {
    fn build(_name: &str, f: &weir_config::Filter) -> Option<Result<Self, String>> {
        let weir_config::Filter::Compress(c) = f else {
            return None;
        };
        Some(Ok(Compress::build(c)))
    }

    fn request(&self, cx: &mut Cx<'_>, req: &mut Request<ClientBody>) -> Verdict {
        cx.compress = Some(Asked::read(req.headers()));
        Verdict::Continue
    }

    fn response(&self, cx: &mut Cx<'_>, resp: &mut Response<ProxyBody>) -> Later {
        let Some(asked) = cx.compress else {
            return Later::Done;
        };
        if cx.method == Method::HEAD || !self.compressible(resp) {
            return Later::Done;
        }
        vary(resp.headers_mut());
        if asked.range {
            return Later::Done;
        }
        let Some(e) = asked.choose(&self.encodings) else {
            return Later::Done;
        };
        let h = resp.headers_mut();
        let size = length(h);
        if resp.body_mut().encode(e, self.levels, size).is_err() {
            return Later::Done;
        }
        let h = resp.headers_mut();
        h.remove(CONTENT_LENGTH);
        h.remove(ACCEPT_RANGES);
        h.insert(CONTENT_ENCODING, HeaderValue::from_static(e.as_str()));
        if let Some(tag) = h.get(ETAG).filter(|t| t.as_bytes().starts_with(b"\"")) {
            let mut weak = b"W/".to_vec();
            weak.extend_from_slice(tag.as_bytes());
            if let Ok(v) = HeaderValue::from_bytes(&weak) {
                h.insert(ETAG, v);
            }
        }
        Later::Done
    }
}

fn length(h: &HeaderMap) -> Option<u64> {
    h.get(CONTENT_LENGTH)?.to_str().ok()?.parse().ok()
}

/// A Content-Encoding other than `identity` is already there.
fn encoded(h: &HeaderMap) -> bool {
    h.get_all(CONTENT_ENCODING).iter().any(|v| {
        v.to_str().map_or(true, |s| {
            s.split(',')
                .any(|c| !c.trim().is_empty() && !c.trim().eq_ignore_ascii_case("identity"))
        })
    })
}

fn no_transform(h: &HeaderMap) -> bool {
    h.get_all(CACHE_CONTROL).iter().any(|v| {
        v.to_str().is_ok_and(|s| {
            s.split(',').any(|d| {
                d.split('=')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .eq_ignore_ascii_case("no-transform")
            })
        })
    })
}

/// Adds `Accept-Encoding` to Vary, into the field already there (one field, no repeat).
fn vary(h: &mut HeaderMap) {
    let mut have = Vec::new();
    for v in h.get_all(VARY) {
        let Ok(s) = v.to_str() else { return };
        for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            // `*` already varies on everything.
            if name == "*" || name.eq_ignore_ascii_case("accept-encoding") {
                return;
            }
            have.push(name);
        }
    }
    if have.is_empty() {
        h.insert(VARY, HeaderValue::from_static("Accept-Encoding"));
        return;
    }
    have.push("Accept-Encoding");
    if let Ok(v) = HeaderValue::from_str(&have.join(", ")) {
        h.insert(VARY, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asked::qvalue;
    use http::header::ACCEPT_ENCODING;
    use Encoding::*;

    const PREFS: &[Encoding] = &[Zstd, Br, Gzip];

    fn choose(ae: &str, prefs: &[Encoding]) -> Option<Encoding> {
        let mut h = HeaderMap::new();
        h.insert(ACCEPT_ENCODING, HeaderValue::from_str(ae).unwrap());
        Asked::read(&h).choose(prefs)
    }

    #[test]
    fn q_values_choose() {
        assert_eq!(choose("gzip", PREFS), Some(Gzip));
        assert_eq!(choose("gzip, br", PREFS), Some(Br));
        assert_eq!(choose("gzip, br", &[Gzip, Br]), Some(Gzip));
        assert_eq!(choose("gzip;q=0.5, br;q=0.9", PREFS), Some(Br));
        assert_eq!(choose("gzip;q=1.0, br;q=0.999", PREFS), Some(Gzip));
        assert_eq!(choose("GZIP ; Q=0.2", PREFS), Some(Gzip));
        assert_eq!(choose("x-gzip", PREFS), Some(Gzip));
        assert_eq!(choose("deflate, gzip, br, zstd", PREFS), Some(Zstd));
        assert_eq!(choose("zstd", &[Gzip, Br]), None);
    }

    #[test]
    fn refusals_star_and_identity() {
        assert_eq!(choose("gzip;q=0", PREFS), None);
        assert_eq!(choose("gzip;q=0.000, br;q=0.1", PREFS), Some(Br));
        assert_eq!(choose("*", PREFS), Some(Zstd));
        assert_eq!(choose("*;q=0.5, zstd;q=0", PREFS), Some(Br));
        assert_eq!(choose("*;q=0", PREFS), None);
        assert_eq!(choose("identity", PREFS), None);
        assert_eq!(choose("", PREFS), None);
        assert_eq!(choose("gzip;q=0.5, identity", PREFS), None);
        assert_eq!(choose("gzip, identity;q=0.5", PREFS), Some(Gzip));
        // A weight that does not parse leaves its element out.
        assert_eq!(choose("br;q=2, gzip;q=0.1", PREFS), Some(Gzip));
        assert_eq!(choose("br;q=0.5.5", PREFS), None);
        assert_eq!(Asked::default().choose(PREFS), None);
    }

    #[test]
    fn qvalues() {
        assert_eq!(qvalue("0"), Some(0));
        assert_eq!(qvalue("1"), Some(1000));
        assert_eq!(qvalue("1.000"), Some(1000));
        assert_eq!(qvalue("0.5"), Some(500));
        assert_eq!(qvalue("0.05"), Some(50));
        assert_eq!(qvalue("0.001"), Some(1));
        assert_eq!(qvalue("1.5"), None);
        assert_eq!(qvalue("0.0001"), None);
        assert_eq!(qvalue("x"), None);
        assert_eq!(qvalue(""), None);
    }

    #[test]
    fn vary_is_merged_once() {
        let mut h = HeaderMap::new();
        vary(&mut h);
        assert_eq!(h[VARY], "Accept-Encoding");
        vary(&mut h);
        assert_eq!(h.get_all(VARY).iter().count(), 1);
        let mut h = HeaderMap::new();
        h.append(VARY, HeaderValue::from_static("Origin"));
        h.append(VARY, HeaderValue::from_static("Cookie, accept-encoding"));
        vary(&mut h);
        assert_eq!(h.get_all(VARY).iter().count(), 2);
        let mut h = HeaderMap::new();
        h.append(VARY, HeaderValue::from_static("Origin, Cookie"));
        vary(&mut h);
        assert_eq!(h[VARY], "Origin, Cookie, Accept-Encoding");
        let mut h = HeaderMap::new();
        h.append(VARY, HeaderValue::from_static("*"));
        vary(&mut h);
        assert_eq!(h[VARY], "*");
    }

    #[test]
    fn content_types_match_without_parameters() {
        let c = Compress::build(&weir_config::filter::Compress::default());
        assert!(c.listed("text/html; charset=utf-8"));
        assert!(c.listed("Text/Plain"));
        assert!(c.listed("application/json"));
        assert!(c.listed("image/svg+xml"));
        assert!(!c.listed("text/"));
        assert!(!c.listed("image/png"));
        assert!(!c.listed("application/jsonx"));
        assert!(!c.listed("application/octet-stream"));
    }
}
