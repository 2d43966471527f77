//! The response head: httparse for the syntax, then the framing rules of
//! RFC 9112 §6.3 as hyper's client applies them, stricter where a response
//! could be read two ways (Transfer-Encoding with Content-Length).

use std::mem::MaybeUninit;

use weir_h1::spans::{offset, Spans};

use bytes::{Bytes, BytesMut};
use http::header::{CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING, UPGRADE};
use http::response::Parts;
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode, Version};

use super::error::Error;
use super::{MAX_HEAD, MAX_HEADERS};
use weir_h1::decode::Decoder;
use weir_h1::fields::{add_length, fold_connection, trim};
use weir_h1::names::header_name;

pub(super) struct Head {
    pub parts: Parts,
    pub decoder: Decoder,
    /// The backend will keep the connection open after this response.
    pub keep_alive: bool,
    /// A `101` to the upgrade the request asked for: the connection now
    /// speaks that protocol, and its bytes after the head are not HTTP.
    pub upgraded: bool,
}

/// Parses a response head from the front of `buf`, skipping interim (1xx)
/// responses. `Ok(None)`: more bytes are needed.
#[cfg(test)]
pub(super) fn parse(buf: &mut BytesMut, method: &Method) -> Result<Option<Head>, Error> {
    parse_for(buf, method, None)
}

/// As `parse`, for a request that carried `upgrade` (its `Upgrade` field):
/// a `101` switching to one of those protocols is accepted, any other 101
/// is refused (nobody asked for it, and its bytes could not be read as HTTP).
pub(super) fn parse_for(
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
    length: Result<Option<u64>, ()>,
    has_length: bool,
}

fn parse_one(buf: &mut BytesMut) -> Result<Option<Parsed>, Error> {
    let mut headers = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut spans = Spans::new();
    let (len, code, version, count, reason_span) = {
        let mut res = httparse::Response::new(&mut []);
        let bytes: &[u8] = buf;
        match httparse::ParserConfig::default().parse_response_with_uninit_headers(
            &mut res,
            bytes,
            &mut headers,
        ) {
            Ok(httparse::Status::Complete(len)) if len <= MAX_HEAD => {
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
            Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
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
                if add_length(found, &value).is_err() {
                    length = Err(());
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
    let reason = &head[reason_span[0] as usize..reason_span[1] as usize];
    if Some(reason) != status.canonical_reason().map(str::as_bytes) {
        // hyper's server sends this reason phrase on to the client.
        if let Ok(r) = hyper::ext::ReasonPhrase::try_from(
            head.slice(reason_span[0] as usize..reason_span[1] as usize),
        ) {
            resp.extensions_mut().insert(r);
        }
    }
    let (parts, ()) = resp.into_parts();
    Ok(Some(Parsed {
        parts,
        keep_alive,
        te,
        length,
        has_length,
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
            Err(()) => return Err(Error::Protocol("invalid Content-Length")),
        }
    };
    Ok(Head {
        parts,
        decoder,
        keep_alive,
        upgraded: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(input: &str, method: Method) -> Result<Option<Head>, Error> {
        let mut buf = BytesMut::from(input.as_bytes());
        parse(&mut buf, &method)
    }

    #[test]
    fn simple_head() {
        let h = head(
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: 1\r\nx-a: 2\r\n\r\nok",
            Method::GET,
        )
        .unwrap()
        .unwrap();
        assert_eq!(h.parts.status, 200);
        assert_eq!(h.parts.headers.get_all("x-a").iter().count(), 2);
        assert_eq!(h.decoder.remaining(), Some(2));
        assert!(h.keep_alive);
        assert!(h
            .parts
            .extensions
            .get::<hyper::ext::ReasonPhrase>()
            .is_none());
    }

    #[test]
    fn partial_heads_wait_for_more() {
        let full = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Nope\r\ncontent-length: 0\r\n\r\n";
        for cut in 0..full.len() {
            let mut buf = BytesMut::from(&full.as_bytes()[..cut]);
            assert!(parse(&mut buf, &Method::GET).unwrap().is_none(), "{cut}");
            buf.extend_from_slice(&full.as_bytes()[cut..]);
            let h = parse(&mut buf, &Method::GET).unwrap().unwrap();
            assert_eq!(h.parts.status, 404);
            assert!(h.decoder.is_done());
            let reason = h
                .parts
                .extensions
                .get::<hyper::ext::ReasonPhrase>()
                .unwrap();
            assert_eq!(reason.as_bytes(), b"Nope");
        }
    }

    #[test]
    fn framing_rules() {
        let done = |s: &str, m: Method| head(s, m).unwrap().unwrap().decoder.is_done();
        assert!(done(
            "HTTP/1.1 204 No Content\r\ncontent-length: 5\r\n\r\n",
            Method::GET
        ));
        assert!(done("HTTP/1.1 304 Not Modified\r\n\r\n", Method::GET));
        assert!(done(
            "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n",
            Method::HEAD
        ));
        assert!(done(
            "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            Method::GET
        ));
        let eof = |s: &str| {
            head(s, Method::GET)
                .unwrap()
                .unwrap()
                .decoder
                .is_eof_delimited()
        };
        assert!(eof("HTTP/1.1 200 OK\r\n\r\n"));
        assert!(eof("HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n"));
        assert!(!eof(
            "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, Chunked\r\n\r\n"
        ));
        let ka = |s: &str| head(s, Method::GET).unwrap().unwrap().keep_alive;
        assert!(!ka(
            "HTTP/1.1 200 OK\r\nconnection: Close\r\ncontent-length: 0\r\n\r\n"
        ));
        assert!(!ka(
            "HTTP/1.1 200 OK\r\nconnection: close\r\nconnection: keep-alive\r\n\r\n"
        ));
        assert!(!ka("HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n"));
        assert!(ka(
            "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\ncontent-length: 0\r\n\r\n"
        ));
    }

    #[test]
    fn invalid_heads() {
        for bad in [
            "HTTP/1.1 200 OK\r\ncontent-length: 1\r\ntransfer-encoding: chunked\r\n\r\n",
            "HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n",
            "HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n",
            "HTTP/1.0 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
            "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\n\r\n",
            "HTTP/1.1 2000 OK\r\n\r\n",
            "HTTP/2.0 200 OK\r\n\r\n",
            "HTTP/1.1 200 OK\r\nbad header\r\n\r\n",
            "HTTP/1.1 200 OK\r\nx: a\r\n folded\r\n\r\n",
            "garbage\r\n\r\n",
        ] {
            assert!(head(bad, Method::GET).is_err(), "{bad:?}");
        }
        let many = format!(
            "HTTP/1.1 200 OK\r\n{}\r\n",
            "a: b\r\n".repeat(MAX_HEADERS + 1)
        );
        assert!(head(&many, Method::GET).is_err());
        let big = format!("HTTP/1.1 200 OK\r\nx: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        assert!(matches!(head(&big, Method::GET), Err(Error::HeadTooLarge)));
        let mut unfinished = BytesMut::from(&big.as_bytes()[..MAX_HEAD + 10]);
        assert!(matches!(
            parse(&mut unfinished, &Method::GET),
            Err(Error::HeadTooLarge)
        ));
    }

    /// A 101 is accepted only for the upgrade the request offered; the bytes
    /// after its head stay in the buffer (they are the new protocol's).
    #[test]
    fn a_101_only_to_the_upgrade_asked_for() {
        let ws = HeaderValue::from_static("websocket");
        let ok = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\nConnection: Upgrade\r\n\r\n\x01\x02hi";
        let mut buf = BytesMut::from(ok);
        let h = parse_for(&mut buf, &Method::GET, Some(&ws))
            .unwrap()
            .unwrap();
        assert!(h.upgraded && !h.keep_alive && h.decoder.is_done());
        assert_eq!(&buf[..], b"\x01\x02hi");
        for (resp, asked) in [
            (ok, None),
            (
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
                Some(&ws),
            ),
            ("HTTP/1.1 101 Switching Protocols\r\n\r\n", Some(&ws)),
        ] {
            let mut buf = BytesMut::from(resp);
            assert!(
                parse_for(&mut buf, &Method::GET, asked).is_err(),
                "{resp:?}"
            );
        }
        // Declined: an ordinary answer, and the connection is not reused.
        let mut buf = BytesMut::from("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
        let h = parse_for(&mut buf, &Method::GET, Some(&ws))
            .unwrap()
            .unwrap();
        assert!(!h.upgraded && !h.keep_alive);
        assert!(offered(b"foo/2, websocket", b"WebSocket"));
        assert!(!offered(b"websocket", b"websocket, h2c"));
    }
}
