//! A request's field block made a request head, with the rules of RFC 9113 §8.2 and §8.3
//! checked as each field arrives (a malformed request is the stream's PROTOCOL_ERROR).

use bytes::Bytes;
use http::header::{HeaderValue, COOKIE};
use http::uri::{Authority, PathAndQuery, Scheme};
use http::{HeaderMap, Method, Uri};

/// A request as its HEADERS said it.
#[derive(Debug)]
pub struct RequestHead {
    pub method: Method,
    pub uri: Uri,
    /// `:protocol` of an extended CONNECT (RFC 8441), e.g. `websocket`.
    pub protocol: Option<Bytes>,
    pub headers: HeaderMap,
    /// `content-length`, which the stream's DATA must add up to.
    pub content_length: Option<u64>,
}

pub use crate::field::Malformed;
use crate::field::{Fields, Pseudo};
use crate::hpack::Parsed;

/// A request's pseudo-fields. `:path` and `:authority` are checked as they arrive, and a
/// dynamic table entry keeps what they made (`Parsed`): a client that indexes them (gRPC
/// clients, browsers) costs no copy or check for them after its first request.
#[derive(Default)]
pub struct RequestPseudo {
    method: Option<Method>,
    /// `Some(None)`: there, but not a scheme (an error only where it is used, with an
    /// authority).
    scheme: Option<Option<Scheme>>,
    authority: Option<Authority>,
    path: Option<PathAndQuery>,
    protocol: Option<Bytes>,
}

impl Pseudo for RequestPseudo {
    const EXPECTS: bool = true;

    fn pseudo(
        &mut self,
        name: &[u8],
        value: &[u8],
        cached: Option<&mut Option<Parsed>>,
    ) -> Result<(), Malformed> {
        match name {
            b"method" => {
                if self.method.is_some() {
                    return Err("two :method fields");
                }
                let m = Method::from_bytes(value).map_err(|_| "an invalid :method")?;
                self.method = Some(m);
            }
            b"scheme" => once(&mut self.scheme, || Ok(Scheme::try_from(value).ok()))?,
            b"authority" => once(&mut self.authority, || {
                if let Some(Some(Parsed::Authority(a))) = cached.as_deref() {
                    return Ok(a.clone());
                }
                let a = Authority::try_from(value).map_err(|_| "an invalid :authority")?;
                if let Some(slot) = cached {
                    *slot = Some(Parsed::Authority(a.clone()));
                }
                Ok(a)
            })?,
            b"path" => once(&mut self.path, || {
                if let Some(Some(Parsed::Path(p))) = cached.as_deref() {
                    return Ok(p.clone());
                }
                // (`http` would read an empty one as "/".)
                if value.is_empty() {
                    return Err("an empty :path");
                }
                let p = PathAndQuery::try_from(value).map_err(|_| "an invalid :path")?;
                if let Some(slot) = cached {
                    *slot = Some(Parsed::Path(p.clone()));
                }
                Ok(p)
            })?,
            b"protocol" => once(&mut self.protocol, || Ok(Bytes::copy_from_slice(value)))?,
            _ => return Err("an unknown pseudo-field"),
        }
        Ok(())
    }
}

/// A pseudo-field that may come once.
fn once<T>(
    slot: &mut Option<T>,
    make: impl FnOnce() -> Result<T, Malformed>,
) -> Result<(), Malformed> {
    if slot.is_some() {
        return Err("a pseudo-field given twice");
    }
    *slot = Some(make()?);
    Ok(())
}

/// Collects a request's (or trailers') fields in order.
pub type Builder = Fields<RequestPseudo>;

impl Fields<RequestPseudo> {
    /// The request head, once every field is in. `connect_protocol`: whether this end
    /// allowed extended CONNECT (SETTINGS_ENABLE_CONNECT_PROTOCOL).
    pub fn request(self, connect_protocol: bool) -> Result<RequestHead, Malformed> {
        if let Some(why) = self.error {
            return Err(why);
        }
        let p = self.pseudo;
        let method = p.method.ok_or("no :method")?;
        let uri = if method == Method::CONNECT && p.protocol.is_none() {
            // Plain CONNECT (§8.5): an authority and nothing else.
            if p.scheme.is_some() || p.path.is_some() {
                return Err("CONNECT with :scheme or :path");
            }
            Uri::from(p.authority.ok_or("CONNECT without :authority")?)
        } else {
            if p.protocol.is_some() && (!connect_protocol || method != Method::CONNECT) {
                return Err(":protocol outside an extended CONNECT");
            }
            let scheme = p.scheme.ok_or("no :scheme")?;
            let mut parts = http::uri::Parts::default();
            parts.path_and_query = Some(p.path.ok_or("no :path")?);
            if let Some(a) = p.authority {
                parts.scheme = Some(scheme.ok_or("an invalid :scheme")?);
                parts.authority = Some(a);
            }
            Uri::from_parts(parts).map_err(|_| "an invalid request target")?
        };
        let mut headers = self.headers;
        join_cookies(&mut headers);
        Ok(RequestHead {
            method,
            uri,
            protocol: p.protocol,
            headers,
            content_length: self.content_length,
        })
    }
}

/// HTTP/2 lets a client send its cookies as separate fields (RFC 9113 §8.2.3, so that each
/// compresses on its own); HTTP/1.1 servers expect one `Cookie` line (RFC 6265 §5.4), and
/// many read only the first. So they are joined with "; " before the request goes on, as
/// that section says to do before any non-HTTP/2 use.
fn join_cookies(headers: &mut HeaderMap) {
    let mut all = headers.get_all(COOKIE).iter();
    let (Some(first), Some(_)) = (all.next(), all.next()) else {
        return;
    };
    let mut joined = first.as_bytes().to_vec();
    for v in headers.get_all(COOKIE).iter().skip(1) {
        joined.extend_from_slice(b"; ");
        joined.extend_from_slice(v.as_bytes());
    }
    let sensitive = headers
        .get_all(COOKIE)
        .iter()
        .any(HeaderValue::is_sensitive);
    // Each part was a valid value, and "; " is too.
    if let Ok(mut v) = HeaderValue::from_maybe_shared(Bytes::from(joined)) {
        v.set_sensitive(sensitive);
        headers.insert(COOKIE, v);
    }
}
