//! A message's fields as they are decoded, on either side of a connection: pseudo-fields
//! first and never in trailers, each regular field checked as RFC 9113 §8.2 says every
//! HTTP/2 field must be. Which pseudo-fields a message has is the side's (`Pseudo`: a
//! request's in `server/head.rs`, a response's in `client/head.rs`).

use http::header::{HeaderName, HeaderValue, CONTENT_LENGTH};
use http::HeaderMap;

use crate::hpack::Parsed;

/// Why a field block is not a well-formed message (the stream's PROTOCOL_ERROR).
pub type Malformed = &'static str;

/// The pseudo-fields one kind of message may have.
pub trait Pseudo: Default {
    /// Whether [`Fields`] notes an `expect` field in these messages (a request's); a
    /// response's fields are not looked at for it.
    const EXPECTS: bool = false;

    /// One pseudo-field, its name without the colon. `cached`: its dynamic table slot, as
    /// for [`regular`].
    fn pseudo(
        &mut self,
        name: &[u8],
        value: &[u8],
        cached: Option<&mut Option<Parsed>>,
    ) -> Result<(), Malformed>;
}

/// Collects a message's fields in order.
pub struct Fields<P> {
    pub pseudo: P,
    pub headers: HeaderMap,
    regular_seen: bool,
    pub content_length: Option<u64>,
    /// Whether an `expect` field came: noted as the fields arrive (its name's length
    /// rules out most at once), so that the many requests without one need no lookup to
    /// know it.
    pub expect: bool,
    /// The first rule broken; later fields are ignored.
    pub error: Option<Malformed>,
}

impl<P: Pseudo> Fields<P> {
    pub fn new(expected_fields: usize) -> Fields<P> {
        Fields {
            pseudo: P::default(),
            headers: HeaderMap::with_capacity(expected_fields),
            regular_seen: false,
            content_length: None,
            expect: false,
            error: None,
        }
    }

    /// One field. `trailers`: a trailer section's, where no pseudo-field may be. `cached`:
    /// its dynamic table slot (see [`regular`]).
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
            return self.pseudo.pseudo(pseudo, value, cached);
        }
        self.regular_seen = true;
        if P::EXPECTS && name.len() == 6 && name == b"expect" {
            self.expect = true;
        }
        regular(
            &mut self.headers,
            &mut self.content_length,
            name,
            value,
            sensitive,
            trailers,
            cached,
        )
    }

    /// A trailer section's fields.
    pub fn trailers(self) -> Result<HeaderMap, Malformed> {
        match self.error {
            Some(why) => Err(why),
            None => Ok(self.headers),
        }
    }
}

/// Checks one regular field and appends it to `headers`; a message's `content-length`
/// (not a trailer's) goes to `content_length` too, which must agree with any earlier one.
/// `cached`: the field's dynamic table slot, when it is an entry: a field made and checked
/// before is taken from it, and one made now is kept there (but `content-length`, whose
/// check depends on the message).
pub(crate) fn regular(
    headers: &mut HeaderMap,
    content_length: &mut Option<u64>,
    name: &[u8],
    value: &[u8],
    sensitive: bool,
    trailers: bool,
    cached: Option<&mut Option<Parsed>>,
) -> Result<(), Malformed> {
    if let Some(Some(Parsed::Field(n, v))) = cached.as_deref() {
        headers.append(n.clone(), v.clone());
        return Ok(());
    }
    if name.iter().any(u8::is_ascii_uppercase) {
        return Err("an upper-case field name");
    }
    let name = match known_name(name) {
        Some(n) => n,
        None => HeaderName::from_bytes(name).map_err(|_| "an invalid field name")?,
    };
    // Fields that describe an HTTP/1 connection have no place in HTTP/2 (§8.2.2).
    if matches!(
        name.as_str(),
        "connection" | "keep-alive" | "proxy-connection" | "transfer-encoding" | "upgrade"
    ) {
        return Err("a connection-specific field");
    }
    if name == http::header::TE && value != b"trailers" {
        return Err("te other than trailers");
    }
    if value.first().is_some_and(|b| matches!(b, b' ' | b'\t'))
        || value.last().is_some_and(|b| matches!(b, b' ' | b'\t'))
    {
        return Err("a field value with leading or trailing whitespace");
    }
    let mut value = match known_value(value) {
        Some(v) => v,
        None => HeaderValue::from_bytes(value).map_err(|_| "an invalid field value")?,
    };
    if name == CONTENT_LENGTH && !trailers {
        let n = std::str::from_utf8(value.as_bytes())
            .ok()
            .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|s| s.parse().ok())
            .ok_or("an invalid content-length")?;
        if content_length.is_some_and(|prev| prev != n) {
            return Err("differing content-length values");
        }
        *content_length = Some(n);
    }
    value.set_sensitive(sensitive);
    if let Some(slot) = cached {
        if name != CONTENT_LENGTH {
            *slot = Some(Parsed::Field(name.clone(), value.clone()));
        }
    }
    headers.append(name, value);
    Ok(())
}

/// gRPC's own field names, as static text. A name made from the block is a copy with a
/// shared count, taken and dropped each time the field is cloned from the dynamic table:
/// two locked operations per field per call, for names every call carries.
fn known_name(name: &[u8]) -> Option<HeaderName> {
    const STATUS: HeaderName = HeaderName::from_static("grpc-status");
    const MESSAGE: HeaderName = HeaderName::from_static("grpc-message");
    const TIMEOUT: HeaderName = HeaderName::from_static("grpc-timeout");
    const ENCODING: HeaderName = HeaderName::from_static("grpc-encoding");
    const ACCEPT_ENCODING: HeaderName = HeaderName::from_static("grpc-accept-encoding");
    Some(match name {
        b"grpc-status" => STATUS,
        b"grpc-message" => MESSAGE,
        b"grpc-timeout" => TIMEOUT,
        b"grpc-encoding" => ENCODING,
        b"grpc-accept-encoding" => ACCEPT_ENCODING,
        _ => return None,
    })
}

/// Values most gRPC calls carry (the content type both ways, `te`, an OK status), as
/// static text for the same reason as [`known_name`]; a fresh `0` status is not copied.
fn known_value(value: &[u8]) -> Option<HeaderValue> {
    const OK: HeaderValue = HeaderValue::from_static("0");
    const TRAILERS: HeaderValue = HeaderValue::from_static("trailers");
    const GRPC: HeaderValue = HeaderValue::from_static("application/grpc");
    const GRPC_PROTO: HeaderValue = HeaderValue::from_static("application/grpc+proto");
    Some(match value {
        b"0" => OK,
        b"trailers" => TRAILERS,
        b"application/grpc" => GRPC,
        b"application/grpc+proto" => GRPC_PROTO,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A static name or value stands for exactly the one the bytes would have made, and a
    /// cached field made from one is the same field again.
    #[test]
    fn known_fields_are_the_fields_their_bytes_make() {
        for n in [
            "grpc-status",
            "grpc-message",
            "grpc-timeout",
            "grpc-encoding",
            "grpc-accept-encoding",
        ] {
            assert_eq!(
                known_name(n.as_bytes()),
                Some(HeaderName::from_bytes(n.as_bytes()).unwrap())
            );
        }
        assert_eq!(known_name(b"grpc-statu"), None);
        for v in [
            "0",
            "trailers",
            "application/grpc",
            "application/grpc+proto",
        ] {
            assert_eq!(known_value(v.as_bytes()), Some(HeaderValue::from_static(v)));
        }
        assert_eq!(known_value(b"00"), None);
        let (mut h, mut len) = (HeaderMap::new(), None);
        let mut slot = None;
        for _ in 0..2 {
            regular(
                &mut h,
                &mut len,
                b"grpc-status",
                b"0",
                true,
                true,
                Some(&mut slot),
            )
            .unwrap();
        }
        let got: Vec<_> = h.get_all("grpc-status").iter().collect();
        assert_eq!(got, ["0", "0"]);
        assert!(got.iter().all(|v| v.is_sensitive()));
    }
}
