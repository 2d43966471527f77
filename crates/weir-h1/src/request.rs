//! The request head: httparse for the syntax (it already refuses obs-fold
//! and whitespace before a colon in requests), then the framing rules of
//! RFC 9112 §6, as hyper's server applies them but stricter wherever a
//! request could be framed two ways (request smuggling):
//!
//! - Transfer-Encoding and Content-Length together: refused (hyper framed
//!   by Transfer-Encoding and closed the connection afterwards);
//! - Transfer-Encoding must end in a single `chunked`; other codings before
//!   it get 501 (hyper accepted them and dropped them on the way upstream);
//! - Content-Length: digits only; repeated lines must agree (one is kept).

use std::mem::MaybeUninit;

use bytes::BytesMut;
use http::header::{CONNECTION, CONTENT_LENGTH, EXPECT, HOST, TRANSFER_ENCODING};
use http::request::Parts;
use http::{HeaderMap, HeaderValue, Method, Request, Uri, Version};

use crate::decode::Decoder;
pub use crate::error::ParseError;
use crate::fields::{digits, fold_connection, trim};
use crate::limits::MAX_REQUEST_HEADERS;
/// Kept here too, where weir-proxy's HTTP/1.1 server takes them from.
pub use crate::limits::{MAX_REQUEST_HEADERS as MAX_HEADERS, MAX_URI_LEN};
use crate::names::header_name;
use crate::spans::{offset, Spans};

/// A request head read, and what it says about its body and connection.
pub struct Head {
    pub parts: Parts,
    pub body: Decoder,
    /// The client allows the connection to stay open after this exchange.
    pub keep_alive: bool,
    /// The client waits for `100 Continue` before it sends the body.
    pub expect_continue: bool,
}

/// What the framing headers said, noted while the head is read.
#[derive(Default)]
struct Framing {
    length: Option<u64>,
    /// Transfer-Encoding seen; its codings ended in `chunked`; other codings.
    te: bool,
    chunked_last: bool,
    chunked_count: u32,
    other_codings: bool,
}

const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0";

/// Fields a proxy may add to a request (weir: X-Forwarded-For, -Proto, -Host, Forwarded), and
/// room for a few a route's filters set (a request id, a client address).
const FORWARD_FIELDS: usize = 6;

/// Parses a request head from the front of `buf` (`Ok(None)`: more bytes
/// are needed).
pub fn parse(buf: &mut BytesMut, max_head: usize) -> Result<Option<Head>, ParseError> {
    let mut raw = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_REQUEST_HEADERS];
    let mut spans = Spans::new();
    let (len, method, target, version, count) = {
        let mut req = httparse::Request::new(&mut []);
        let bytes: &[u8] = buf;
        match httparse::ParserConfig::default()
            .parse_request_with_uninit_headers(&mut req, bytes, &mut raw)
        {
            Ok(httparse::Status::Complete(len)) if len <= max_head => {
                let at = |s: &[u8]| offset(bytes.as_ptr() as usize, s);
                spans.record(bytes, req.headers);
                let path = req.path.unwrap_or("");
                if path.len() > MAX_URI_LEN {
                    return Err(ParseError::UriTooLong);
                }
                let method = Method::from_bytes(req.method.unwrap_or("").as_bytes())
                    .map_err(|_| ParseError::Method)?;
                if method == Method::CONNECT {
                    return Err(ParseError::Connect);
                }
                // Origin-form (`/...`) or absolute-form (`scheme://...`); `*`
                // only for OPTIONS (RFC 9112 §3.2).
                let form_ok = match path.as_bytes().first() {
                    Some(b'/') => true,
                    Some(b'*') => path == "*" && method == Method::OPTIONS,
                    _ => path.contains("://"),
                };
                if !form_ok {
                    return Err(ParseError::TargetForm);
                }
                let p = at(path.as_bytes()) as usize;
                let version = match req.version {
                    Some(1) => Version::HTTP_11,
                    _ => Version::HTTP_10,
                };
                (len, method, p..p + path.len(), version, req.headers.len())
            }
            Ok(httparse::Status::Complete(_)) => return Err(ParseError::TooLarge(max_head)),
            Ok(httparse::Status::Partial) if buf.len() >= max_head => {
                return Err(ParseError::TooLarge(max_head))
            }
            Ok(httparse::Status::Partial) => return Ok(None),
            // An HTTP/2 preface; or, cut short, perhaps one (the answer
            // must not depend on how the bytes were split).
            Err(_) if buf.starts_with(H2_PREFACE) => return Err(ParseError::Http2Preface),
            Err(_) if H2_PREFACE.starts_with(buf) => return Ok(None),
            Err(httparse::Error::TooManyHeaders) => return Err(ParseError::TooManyHeaders),
            Err(e) => return Err(ParseError::Syntax(e)),
        }
    };
    let head = buf.split_to(len).freeze();
    let uri = Uri::from_maybe_shared(head.slice(target)).map_err(|_| ParseError::Uri)?;

    let mut keep_alive = version == Version::HTTP_11;
    let mut saw_close = false;
    let mut expect_continue = false;
    let mut framing = Framing::default();
    let mut map = HeaderMap::new();
    // Room for the X-Forwarded-* fields the proxy adds: growing the map
    // later rehashes it (twice per new connection, in callgrind).
    map.reserve(count + FORWARD_FIELDS);
    for (name, value) in spans.iter() {
        let name = header_name(&head[name])
            .map_err(|_| ParseError::Syntax(httparse::Error::HeaderName))?;
        let value = head.slice(value);
        if name == CONTENT_LENGTH {
            let n = digits(&value).ok_or(ParseError::Framing("invalid Content-Length"))?;
            match framing.length {
                Some(prev) if prev != n => {
                    return Err(ParseError::Framing("differing Content-Length values"))
                }
                // A repeated equal line adds nothing (hyper drops it too).
                Some(_) => continue,
                None => framing.length = Some(n),
            }
        } else if name == TRANSFER_ENCODING {
            if version == Version::HTTP_10 {
                return Err(ParseError::Framing(
                    "Transfer-Encoding in an HTTP/1.0 request",
                ));
            }
            framing.te = true;
            for coding in value.split(|&b| b == b',').map(trim) {
                if coding.is_empty() {
                    return Err(ParseError::Framing("empty transfer coding"));
                }
                framing.chunked_last = coding.eq_ignore_ascii_case(b"chunked");
                if framing.chunked_last {
                    framing.chunked_count += 1;
                } else {
                    framing.other_codings = true;
                }
            }
        } else if name == CONNECTION && fold_connection(&value, &mut keep_alive, &mut saw_close) {
            continue;
        } else if name == EXPECT {
            expect_continue = value.eq_ignore_ascii_case(b"100-continue");
            // 100-continue is the one expectation HTTP defines: any other cannot be met
            // (417, RFC 9110 §10.1.1, as Go's server and Apache answer). An HTTP/1.0
            // client's expectations are ignored (§10.1.1 for 100-continue).
            if !expect_continue && version == Version::HTTP_11 {
                return Err(ParseError::Expectation);
            }
        } else if name == HOST && !valid_host(&value) {
            return Err(ParseError::Host);
        }
        // SAFETY: httparse accepted the value, so it holds only HTAB, SP,
        // visible ASCII and obs-text: exactly what a HeaderValue may hold.
        let value = unsafe { HeaderValue::from_maybe_shared_unchecked(value) };
        map.append(name, value);
    }
    let body = body_framing(&framing)?;
    let mut req = Request::new(());
    *req.method_mut() = method;
    *req.uri_mut() = uri;
    *req.version_mut() = version;
    *req.headers_mut() = map;
    let (parts, ()) = req.into_parts();
    Ok(Some(Head {
        expect_continue: expect_continue && version == Version::HTTP_11 && !body.is_done(),
        parts,
        body,
        keep_alive,
    }))
}

/// RFC 9110 §7.2: `uri-host [ ":" port ]` (or empty), checked by its
/// characters: a reg-name's, an IP literal's brackets, the port's colon.
/// Anything else (spaces, `@`, `/`, control bytes) would let a Host mean
/// one thing to weir's router and another to the backend.
fn valid_host(v: &[u8]) -> bool {
    v.iter()
        .all(|&b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=%:[]".contains(&b))
}

/// How the body is framed (RFC 9112 §6.3), or why it cannot be told.
fn body_framing(f: &Framing) -> Result<Decoder, ParseError> {
    if !f.te {
        return Ok(Decoder::length(f.length.unwrap_or(0)));
    }
    if f.length.is_some() {
        return Err(ParseError::Framing(
            "both Transfer-Encoding and Content-Length",
        ));
    }
    if !f.chunked_last {
        return Err(ParseError::Framing(
            "Transfer-Encoding does not end in chunked",
        ));
    }
    if f.chunked_count > 1 {
        return Err(ParseError::Framing("chunked applied more than once"));
    }
    if f.other_codings {
        return Err(ParseError::UnsupportedCoding);
    }
    Ok(Decoder::chunked())
}

#[cfg(test)]
mod tests;
