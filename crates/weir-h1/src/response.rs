//! The response head: httparse for the syntax, then the framing rules of
//! RFC 9112 §6.3 as hyper's client applies them, stricter where a response
//! could be read two ways (Transfer-Encoding with Content-Length).

use std::mem::MaybeUninit;

use bytes::{Bytes, BytesMut};
use http::header::{CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING, UPGRADE};
use http::response::Parts;
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode, Version};

use crate::decode::Decoder;
pub use crate::error::ResponseError as Error;
use crate::fields::{add_length, fold_connection, trim, InvalidLength};
use crate::limits::{MAX_RESPONSE_HEAD, MAX_RESPONSE_HEADERS};
/// Kept here too, where weir-proxy's HTTP/1.1 client takes them from.
pub use crate::limits::{MAX_RESPONSE_HEAD as MAX_HEAD, MAX_RESPONSE_HEADERS as MAX_HEADERS};
use crate::names::header_name;
use crate::spans::{offset, Spans};

/// A final response head read, and what it says about its body and connection.
pub struct Head {
    pub parts: Parts,
    pub decoder: Decoder,
    /// The backend will keep the connection open after this response.
    pub keep_alive: bool,
    /// A `101` to the upgrade the request asked for: the connection now
    /// speaks that protocol, and its bytes after the head are not HTTP.
    pub upgraded: bool,
    /// The status line's reason phrase, when it is not the status's usual one (hyper's
    /// server sends such a phrase on to the client; weir-proxy hands it to it).
    pub reason: Option<Bytes>,
}

/// Parses a response head from the front of `buf`, skipping interim (1xx)
/// responses. `Ok(None)`: more bytes are needed.
pub fn parse(buf: &mut BytesMut, method: &Method) -> Result<Option<Head>, Error> {
    parse_for(buf, method, None)
}

/// As `parse`, for a request that carried `upgrade` (its `Upgrade` field):
/// a `101` switching to one of those protocols is accepted, any other 101
/// is refused (nobody asked for it, and its bytes could not be read as HTTP).
pub fn parse_for(
    buf: &mut BytesMut,
    method: &Method,
    upgrade: Option<&HeaderValue>,
) -> Result<Option<Head>, Error> {
    loop {
        let Some(mut head) = parse_one(buf)? else {
            return Ok(None);
        };
        let status = head.parts.status.as_u16();
        match status {
            101 => {
                let to = head.parts.headers.get(UPGRADE);
                return match (upgrade, to) {
                    (Some(asked), Some(to)) if offered(asked.as_bytes(), to.as_bytes()) => {
                        Ok(Some(Head {
                            parts: head.parts,
                            decoder: Decoder::Done,
                            keep_alive: false,
                            upgraded: true,
                            reason: head.reason,
                        }))
                    }
                    (Some(_), _) => Err(Error::Protocol(
                        "101 Switching Protocols to a protocol the request did not offer",
                    )),
                    (None, _) => Err(Error::Protocol(
                        "101 Switching Protocols to a request that asked for no upgrade",
                    )),
                };
            }
            100..=199 => continue,
            _ => {}
        }
        if upgrade.is_some() {
            // The backend declined the upgrade; it may still read what
            // follows as the other protocol, so the connection is not reused.
            head.keep_alive = false;
        }
        return framing(head, method).map(Some);
    }
}

/// Fields weir may add to an upstream's answer (see `parse_for`'s map).
const ANSWER_FIELDS: usize = 6;

/// Whether every protocol of the response's `Upgrade` (`to`) was among the
/// request's (`asked`), by name (RFC 9110 §7.8: the server lists the ones it
/// switches to, in order, from those the client offered).
fn offered(asked: &[u8], to: &[u8]) -> bool {
    let name = |t: &[u8]| -> Vec<u8> {
        let t = trim(t);
        let n = t.split(|&b| b == b'/').next().unwrap_or(t);
        n.to_ascii_lowercase()
    };
    let asked: Vec<Vec<u8>> = asked.split(|&b| b == b',').map(name).collect();
    let mut any = false;
    for t in to.split(|&b| b == b',').map(name) {
        if t.is_empty() || !asked.contains(&t) {
            return false;
        }
        any = true;
    }
    any
}

struct Parsed {
    parts: Parts,
    keep_alive: bool,
    /// The framing headers, noted while the head was read: the last
    /// Transfer-Encoding line, and Content-Length (`Err` if invalid).
    te: Option<Bytes>,
    length: Result<Option<u64>, InvalidLength>,
    has_length: bool,
    /// See [`Head::reason`].
    reason: Option<Bytes>,
}

fn parse_one(buf: &mut BytesMut) -> Result<Option<Parsed>, Error> {
    let mut headers =
        [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_RESPONSE_HEADERS];
    let mut spans = Spans::new();
    let (len, code, version, count, reason_span) = {
        let mut res = httparse::Response::new(&mut []);
        let bytes: &[u8] = buf;
        match httparse::ParserConfig::default().parse_response_with_uninit_headers(
            &mut res,
            bytes,
            &mut headers,
        ) {
            Ok(httparse::Status::Complete(len)) if len <= MAX_RESPONSE_HEAD => {
                let at = |s: &[u8]| offset(bytes.as_ptr() as usize, s);
                spans.record(bytes, res.headers);
                let reason = res.reason.unwrap_or("");
                let r = at(reason.as_bytes());
                (
                    len,
                    res.code.unwrap_or(0),
                    res.version.unwrap_or(1),
                    res.headers.len(),
                    [r, r + reason.len() as u32],
                )
            }
            Ok(httparse::Status::Complete(_)) => return Err(Error::HeadTooLarge),
            Ok(httparse::Status::Partial) if buf.len() > MAX_RESPONSE_HEAD => {
                return Err(Error::HeadTooLarge)
            }
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => return Err(Error::Parse(e)),
        }
    };
    let head = buf.split_to(len).freeze();
    let status = StatusCode::from_u16(code).map_err(|_| Error::Protocol("invalid status code"))?;
    let version = if version == 1 {
        Version::HTTP_11
    } else {
        Version::HTTP_10
    };
    let mut keep_alive = version == Version::HTTP_11;
    let mut saw_close = false;
    let mut te = None;
    let mut length = Ok(None);
    let mut has_length = false;
    // Room for what weir adds before the answer goes out (a sticky cookie, HSTS, a route
    // filter's fields), so adding them does not regrow the map.
    let mut map = HeaderMap::with_capacity(count + ANSWER_FIELDS);
    for (name, value) in spans.iter() {
        let name = header_name(&head[name]).map_err(|_| Error::Protocol("invalid header name"))?;
        let value = head.slice(value);
        if name == CONTENT_LENGTH {
            has_length = true;
            if let Ok(found) = &mut length {
                if let Err(e) = add_length(found, &value) {
                    length = Err(e);
                }
            }
        } else if name == TRANSFER_ENCODING {
            te = Some(value.clone());
        } else if name == CONNECTION && fold_connection(&value, &mut keep_alive, &mut saw_close) {
            continue;
        }
        // SAFETY: httparse accepted the value, so it holds only HTAB, SP,
        // visible ASCII and obs-text: exactly what a HeaderValue may hold.
        let value = unsafe { HeaderValue::from_maybe_shared_unchecked(value) };
        map.append(name, value);
    }
    let mut resp = Response::new(());
    *resp.status_mut() = status;
    *resp.version_mut() = version;
    *resp.headers_mut() = map;
    let span = reason_span[0] as usize..reason_span[1] as usize;
    let reason = (Some(&head[span.clone()]) != status.canonical_reason().map(str::as_bytes))
        .then(|| head.slice(span));
    let (parts, ()) = resp.into_parts();
    Ok(Some(Parsed {
        parts,
        keep_alive,
        te,
        length,
        has_length,
        reason,
    }))
}

/// How the body of a final response is framed (RFC 9112 §6.3).
fn framing(head: Parsed, method: &Method) -> Result<Head, Error> {
    let Parsed {
        parts,
        keep_alive,
        te,
        length,
        has_length,
        reason,
    } = head;
    let status = parts.status.as_u16();
    let decoder = if status == 204 || status == 304 || *method == Method::HEAD {
        Decoder::Done
    } else if *method == Method::CONNECT && parts.status.is_success() {
        return Err(Error::Protocol("CONNECT tunnels are not supported"));
    } else if let Some(te) = te {
        if has_length {
            return Err(Error::Protocol("both Transfer-Encoding and Content-Length"));
        }
        if parts.version == Version::HTTP_10 {
            return Err(Error::Protocol("Transfer-Encoding in an HTTP/1.0 response"));
        }
        let last = te.rsplit(|&b| b == b',').next().unwrap_or(b"");
        if trim(last).eq_ignore_ascii_case(b"chunked") {
            Decoder::chunked()
        } else {
            Decoder::Eof
        }
    } else {
        match length {
            Ok(Some(n)) => Decoder::length(n),
            Ok(None) => Decoder::Eof,
            Err(InvalidLength) => return Err(Error::Protocol("invalid Content-Length")),
        }
    };
    Ok(Head {
        parts,
        decoder,
        keep_alive,
        upgraded: false,
        reason,
    })
}

#[cfg(test)]
mod tests;
