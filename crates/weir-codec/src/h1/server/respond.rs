//! The response head, and how its body goes on the wire. The rules are
//! hyper's server's (RFC 9112 §6): Content-Length when the size is known,
//! chunked when it is not (HTTP/1.1), close-delimited for an HTTP/1.0
//! client; no body after HEAD, 1xx, 204 and 304; `Date` added when
//! missing; `Connection: close` when the connection ends after this
//! response (`keep-alive` for an HTTP/1.0 client that asked for it).
//! Transfer-Encoding from the handler is dropped: the framing is this hop's.

use http::header::{CONNECTION, CONTENT_LENGTH, DATE, TRANSFER_ENCODING};
use http::response::Parts;
use http::{Method, StatusCode, Version};

use crate::h1::date;
use weir_h1::fields::{digits, has_token, push_decimal, push_field};

/// What the request tells about its response.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asked {
    pub head: bool,
    pub connect: bool,
    pub http10: bool,
}

impl Asked {
    pub fn of(method: &Method, version: Version) -> Self {
        Asked {
            head: *method == Method::HEAD,
            connect: *method == Method::CONNECT,
            http10: version == Version::HTTP_10,
        }
    }
}

/// What is known about the response body before it is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Length {
    /// It is already over (or empty).
    None,
    Known(u64),
    Unknown,
}

/// How the body bytes go on the wire after the head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body is sent, whatever the handler has.
    Nothing,
    Length(u64),
    Chunked,
    /// Until the connection closes.
    Close,
}

/// Appends the response head to `dst`. `keep_alive` comes in as what the
/// request and the connection allow, and goes out as whether the
/// connection stays open after this response.
pub(crate) fn head(
    dst: &mut Vec<u8>,
    parts: &Parts,
    length: Length,
    asked: Asked,
    keep_alive: &mut bool,
) -> Framing {
    let status = parts.status;
    let informational = status.is_informational();
    let connect_ok = asked.connect && status.is_success();
    let no_content = status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED;
    let may_length = !(informational || connect_ok || no_content);
    let may_body = may_length && !asked.head;

    dst.reserve(128 + parts.headers.len() * 32);
    status_line(dst, parts, asked);
    let mut length_value = None;
    let mut has_date = false;
    let mut conn_close = false;
    let mut conn_keep = false;
    for (name, value) in &parts.headers {
        if name == CONTENT_LENGTH {
            length_value.get_or_insert(value);
            continue;
        }
        if name == TRANSFER_ENCODING {
            continue;
        }
        if name == CONNECTION {
            conn_close |= has_token(value.as_bytes(), "close");
            conn_keep |= has_token(value.as_bytes(), "keep-alive");
        } else if name == DATE {
            has_date = true;
        }
        push_field(dst, name.as_str().as_bytes(), value.as_bytes());
    }

    let framing = match length {
        // A HEAD answer keeps the length the GET would have had.
        Length::None if asked.head => {
            if let Some(v) = length_value {
                push_field(dst, b"content-length", v.as_bytes());
            }
            Framing::Nothing
        }
        Length::None => {
            if may_length {
                dst.extend_from_slice(b"content-length: 0\r\n");
            }
            Framing::Nothing
        }
        Length::Known(n) => match length_value {
            Some(v) => {
                push_field(dst, b"content-length", v.as_bytes());
                Framing::Length(n)
            }
            None if may_length => {
                dst.extend_from_slice(b"content-length: ");
                push_decimal(dst, n);
                dst.extend_from_slice(b"\r\n");
                Framing::Length(n)
            }
            None => Framing::Nothing,
        },
        Length::Unknown => match length_value.and_then(|v| Some((v, digits(v.as_bytes())?))) {
            Some((v, n)) => {
                push_field(dst, b"content-length", v.as_bytes());
                Framing::Length(n)
            }
            None if asked.http10 || !may_body => Framing::Close,
            None => {
                dst.extend_from_slice(b"transfer-encoding: chunked\r\n");
                Framing::Chunked
            }
        },
    };
    let framing = if may_body { framing } else { Framing::Nothing };

    if conn_close || framing == Framing::Close {
        *keep_alive = false;
    }
    if asked.http10 {
        // HTTP/1.0 closes unless both sides say keep-alive: the client said it (or
        // `keep_alive` came in false), and weir says it here. Whatever the backend's
        // answer said of its own connection (an HTTP/1.0 answer without keep-alive)
        // is about that hop only (RFC 9110 §7.6.1), not this one.
        if *keep_alive && !conn_keep {
            dst.extend_from_slice(b"connection: keep-alive\r\n");
        }
    } else if !*keep_alive && !conn_close {
        dst.extend_from_slice(b"connection: close\r\n");
    }
    if !has_date {
        dst.extend_from_slice(b"date: ");
        date::extend(dst);
        dst.extend_from_slice(b"\r\n");
    }
    dst.extend_from_slice(b"\r\n");
    framing
}

/// In weir's own version (RFC 9110 §6.2), not the upstream's: HTTP/1.1, or HTTP/1.0 to a
/// client that asked in it. An HTTP/1.0 answer relayed as such would tell an HTTP/1.1 client
/// its connection ends, and could not carry the chunks weir frames an unknown length with.
fn status_line(dst: &mut Vec<u8>, parts: &Parts, asked: Asked) {
    let reason = parts.extensions.get::<hyper::ext::ReasonPhrase>();
    let http10 = asked.http10;
    if !http10 && parts.status == StatusCode::OK && reason.is_none() {
        dst.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
        return;
    }
    dst.extend_from_slice(if http10 { b"HTTP/1.0 " } else { b"HTTP/1.1 " });
    dst.extend_from_slice(parts.status.as_str().as_bytes());
    dst.push(b' ');
    match reason {
        Some(r) => dst.extend_from_slice(r.as_bytes()),
        // A reason must be written: many parsers expect one.
        None => dst.extend_from_slice(
            parts
                .status
                .canonical_reason()
                .unwrap_or("<none>")
                .as_bytes(),
        ),
    }
    dst.extend_from_slice(b"\r\n");
}

/// The whole answer to a request that could not be read: weir's error
/// text (as `http/error.rs` makes it), then the connection closes.
pub(crate) fn refusal(dst: &mut Vec<u8>, status: u16) {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    let reason = weir_metrics::reason::Reason::BadRequest.as_str();
    let text = status.canonical_reason().unwrap_or("Error");
    let body_len = 3 + 1 + text.len() + 2 + reason.len() + 1;
    dst.extend_from_slice(b"HTTP/1.1 ");
    dst.extend_from_slice(status.as_str().as_bytes());
    dst.push(b' ');
    dst.extend_from_slice(text.as_bytes());
    dst.extend_from_slice(b"\r\ncontent-type: text/plain; charset=utf-8\r\nx-weir-reason: ");
    dst.extend_from_slice(reason.as_bytes());
    if status == StatusCode::METHOD_NOT_ALLOWED {
        // Only CONNECT is refused so (RFC 9110 §15.5.6 wants the list).
        dst.extend_from_slice(b"\r\nallow: GET, HEAD, POST, PUT, DELETE, OPTIONS, TRACE, PATCH");
    }
    dst.extend_from_slice(b"\r\nconnection: close\r\ncontent-length: ");
    push_decimal(dst, body_len as u64);
    dst.extend_from_slice(b"\r\ndate: ");
    date::extend(dst);
    dst.extend_from_slice(b"\r\n\r\n");
    dst.extend_from_slice(status.as_str().as_bytes());
    dst.push(b' ');
    dst.extend_from_slice(text.as_bytes());
    dst.extend_from_slice(b": ");
    dst.extend_from_slice(reason.as_bytes());
    dst.push(b'\n');
}
