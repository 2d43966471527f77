//! A regular (not pseudo) field of a request, a response or trailers, checked as RFC 9113
//! §8.2 says every HTTP/2 field must be, on either side of a connection.

use http::header::{HeaderName, HeaderValue, CONTENT_LENGTH};
use http::HeaderMap;

use crate::hpack::Parsed;

/// Why a field block is not a well-formed message (the stream's PROTOCOL_ERROR).
pub type Malformed = &'static str;

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
    if let Some(Some((n, v))) = cached.as_deref() {
        headers.append(n.clone(), v.clone());
        return Ok(());
    }
    if name.iter().any(u8::is_ascii_uppercase) {
        return Err("an upper-case field name");
    }
    let name = HeaderName::from_bytes(name).map_err(|_| "an invalid field name")?;
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
    let mut value = HeaderValue::from_bytes(value).map_err(|_| "an invalid field value")?;
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
            *slot = Some((name.clone(), value.clone()));
        }
    }
    headers.append(name, value);
    Ok(())
}
