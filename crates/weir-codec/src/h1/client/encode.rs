//! The request head, and how the request body is framed. The framing rules
//! are hyper's client's, so backends see what they saw before: a valid
//! `Content-Length` the client sent is kept, a body of known size gets one,
//! a body of unknown size is chunked (except on GET, HEAD and CONNECT, which
//! then send none), and an empty body adds no framing header.

use http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
use http::request::Parts;
use http::Method;

use crate::added::Added;
use weir_h1::fields::{content_length, push_decimal, push_field};

/// What is known about the request body before it is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BodyKind {
    Empty,
    Known(u64),
    Unknown,
}

/// How the body bytes go on the wire after the head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framing {
    /// Exactly this many bytes (0: no body is sent at all).
    Length(u64),
    Chunked,
}

/// Appends the request head to `dst` (`parts`, then `added`) and says how to frame the body.
pub(super) fn head(dst: &mut Vec<u8>, parts: &Parts, added: &Added<'_>, body: BodyKind) -> Framing {
    // Which framing header weir adds, and whether the client's
    // Content-Length lines are dropped (a chunked body replaces them).
    // (No header lookup for the common request without a body.)
    let existing = match body {
        BodyKind::Empty => None,
        _ => content_length(&parts.headers).ok().flatten(),
    };
    let (framing, add_length, drop_length, chunked) = match (body, existing) {
        (BodyKind::Empty, _) => (Framing::Length(0), None, false, false),
        (_, Some(n)) => (Framing::Length(n), None, false, false),
        (BodyKind::Known(n), None) => (Framing::Length(n), Some(n), true, false),
        (BodyKind::Unknown, None) => match parts.method {
            Method::GET | Method::HEAD | Method::CONNECT => {
                (Framing::Length(0), None, false, false)
            }
            _ => (Framing::Chunked, None, true, true),
        },
    };

    dst.reserve(64 + parts.headers.len() * 32);
    dst.extend_from_slice(parts.method.as_str().as_bytes());
    dst.push(b' ');
    match parts.uri.path_and_query() {
        Some(pq) if parts.uri.authority().is_none() => {
            dst.extend_from_slice(pq.as_str().as_bytes())
        }
        // Absolute form (forward.rs turns requests into origin form; this
        // is for anyone else) or an empty target.
        _ => {
            let s = parts.uri.to_string();
            dst.extend_from_slice(if s.is_empty() { b"/" } else { s.as_bytes() });
        }
    }
    dst.extend_from_slice(b" HTTP/1.1\r\n");
    for (name, value) in &parts.headers {
        // The framing is this hop's: the client's Transfer-Encoding never
        // passes (forward.rs already removed it), nor a Content-Length
        // that weir replaces.
        if name == TRANSFER_ENCODING || (drop_length && name == CONTENT_LENGTH) {
            continue;
        }
        push_field(dst, name.as_str().as_bytes(), value.as_bytes());
    }
    for (name, value) in added.iter() {
        push_field(dst, name.as_bytes(), value);
    }
    if let Some(n) = add_length {
        dst.extend_from_slice(b"content-length: ");
        push_decimal(dst, n);
        dst.extend_from_slice(b"\r\n");
    }
    if chunked {
        dst.extend_from_slice(b"transfer-encoding: chunked\r\n");
    }
    dst.extend_from_slice(b"\r\n");
    framing
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Request;

    fn encode(req: Request<()>, body: BodyKind) -> (String, Framing) {
        let (parts, ()) = req.into_parts();
        let mut v = Vec::new();
        let f = head(&mut v, &parts, &Added::NONE, body);
        (String::from_utf8(v).unwrap(), f)
    }

    #[test]
    fn heads_and_framing() {
        let get = Request::get("/a?b=c").header("host", "x").body(()).unwrap();
        assert_eq!(
            encode(get, BodyKind::Empty),
            (
                "GET /a?b=c HTTP/1.1\r\nhost: x\r\n\r\n".into(),
                Framing::Length(0)
            )
        );
        let post = Request::post("/").body(()).unwrap();
        assert_eq!(
            encode(post, BodyKind::Known(12345)),
            (
                "POST / HTTP/1.1\r\ncontent-length: 12345\r\n\r\n".into(),
                Framing::Length(12345)
            )
        );
        let post = Request::post("/")
            .header("content-length", "7")
            .body(())
            .unwrap();
        assert_eq!(
            encode(post, BodyKind::Unknown),
            (
                "POST / HTTP/1.1\r\ncontent-length: 7\r\n\r\n".into(),
                Framing::Length(7)
            )
        );
        let put = Request::put("/")
            .header("content-length", "x")
            .header("transfer-encoding", "chunked")
            .body(())
            .unwrap();
        assert_eq!(
            encode(put, BodyKind::Unknown),
            (
                "PUT / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n".into(),
                Framing::Chunked
            )
        );
        let get = Request::get("/").body(()).unwrap();
        assert_eq!(encode(get, BodyKind::Unknown).1, Framing::Length(0));
        let opts = Request::options("*").body(()).unwrap();
        assert_eq!(
            encode(opts, BodyKind::Empty).0,
            "OPTIONS * HTTP/1.1\r\n\r\n"
        );
    }
}
