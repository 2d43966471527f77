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
use crate::hpack::Parsed;

/// Collects a request's fields in order.
#[derive(Default)]
pub struct Builder {
    method: Option<Method>,
    scheme: Option<Bytes>,
    authority: Option<Bytes>,
    path: Option<Bytes>,
    protocol: Option<Bytes>,
    headers: HeaderMap,
    regular_seen: bool,
    content_length: Option<u64>,
    /// The first rule broken; later fields are ignored.
    pub error: Option<Malformed>,
}

impl Builder {
    pub fn new(expected_fields: usize) -> Builder {
        Builder {
            headers: HeaderMap::with_capacity(expected_fields),
            ..Builder::default()
        }
    }

    /// One field. `trailers`: a trailer section's, where no pseudo-field may be. `cached`:
    /// its dynamic table slot (see `field::regular`).
    pub fn field(
        &mut self,
        name: &[u8],
        value: &[u8],
        sensitive: bool,
        trailers: bool,
        cached: Option<&mut Option<Parsed>>,
    ) {
        if self.error.is_none() {
            if let Err(why) = self.add(name, value, sensitive, trailers, cached) {
                self.error = Some(why);
            }
        }
    }

    fn add(
        &mut self,
        name: &[u8],
        value: &[u8],
        sensitive: bool,
        trailers: bool,
        cached: Option<&mut Option<Parsed>>,
    ) -> Result<(), Malformed> {
        if let Some(pseudo) = name.strip_prefix(b":") {
            if trailers {
                return Err("a pseudo-field in trailers");
            }
            if self.regular_seen {
                return Err("a pseudo-field after a regular field");
            }
            let slot = match pseudo {
                b"method" => {
                    if self.method.is_some() {
                        return Err("two :method fields");
                    }
                    let m = Method::from_bytes(value).map_err(|_| "an invalid :method")?;
                    self.method = Some(m);
                    return Ok(());
                }
                b"scheme" => &mut self.scheme,
                b"authority" => &mut self.authority,
                b"path" => &mut self.path,
                b"protocol" => &mut self.protocol,
                _ => return Err("an unknown pseudo-field"),
            };
            if slot.is_some() {
                return Err("a pseudo-field given twice");
            }
            *slot = Some(Bytes::copy_from_slice(value));
            return Ok(());
        }
        self.regular_seen = true;
        crate::field::regular(
            &mut self.headers,
            &mut self.content_length,
            name,
            value,
            sensitive,
            trailers,
            cached,
        )
    }

    /// The request head, once every field is in. `connect_protocol`: whether this end
    /// allowed extended CONNECT (SETTINGS_ENABLE_CONNECT_PROTOCOL).
    pub fn request(self, connect_protocol: bool) -> Result<RequestHead, Malformed> {
        if let Some(why) = self.error {
            return Err(why);
        }
        let method = self.method.ok_or("no :method")?;
        let uri = if method == Method::CONNECT && self.protocol.is_none() {
            // Plain CONNECT (§8.5): an authority and nothing else.
            if self.scheme.is_some() || self.path.is_some() {
                return Err("CONNECT with :scheme or :path");
            }
            let a = self.authority.ok_or("CONNECT without :authority")?;
            Uri::from(Authority::from_maybe_shared(a).map_err(|_| "an invalid :authority")?)
        } else {
            if self.protocol.is_some() && (!connect_protocol || method != Method::CONNECT) {
                return Err(":protocol outside an extended CONNECT");
            }
            let scheme = self.scheme.ok_or("no :scheme")?;
            let path = self.path.ok_or("no :path")?;
            if path.is_empty() {
                return Err("an empty :path");
            }
            let mut parts = http::uri::Parts::default();
            parts.path_and_query =
                Some(PathAndQuery::from_maybe_shared(path).map_err(|_| "an invalid :path")?);
            if let Some(a) = self.authority {
                parts.scheme =
                    Some(Scheme::try_from(&scheme[..]).map_err(|_| "an invalid :scheme")?);
                parts.authority =
                    Some(Authority::from_maybe_shared(a).map_err(|_| "an invalid :authority")?);
            }
            Uri::from_parts(parts).map_err(|_| "an invalid request target")?
        };
        let mut headers = self.headers;
        join_cookies(&mut headers);
        Ok(RequestHead {
            method,
            uri,
            protocol: self.protocol,
            headers,
            content_length: self.content_length,
        })
    }

    /// A trailer section's fields.
    pub fn trailers(self) -> Result<HeaderMap, Malformed> {
        match self.error {
            Some(why) => Err(why),
            None => Ok(self.headers),
        }
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
