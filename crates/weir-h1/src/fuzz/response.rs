//! Response framing over arbitrary bytes, for the `response_framing` fuzz target and a unit
//! test on random input: what an upstream sends back on one connection, read as the answers
//! to requests made with one method, must never panic and must frame the same whether it
//! arrives whole or split anywhere. A backend is not trusted to be well-formed, and weir is
//! built to abort on a panic: a response that could panic the parser would take every
//! connection down with it.

use bytes::BytesMut;
use http::{HeaderValue, Method};

use crate::decode::Decoder;
use crate::response::{parse_for, Head};

/// One framed response: status, fields, the reason phrase when unusual, whether the
/// connection stays open, body.
pub type Framed = (u16, Vec<(String, Vec<u8>)>, Option<Vec<u8>>, bool, Vec<u8>);

/// How the stream ended.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    /// Every answer was whole (one delimited by the connection's end included), and the last
    /// one closed the connection or nothing followed it.
    Clean,
    /// A head or body is unfinished.
    NeedMore,
    /// A head was refused.
    Refused,
    /// A body broke its framing.
    BadBody,
    /// The connection switched to the protocol the request asked for.
    Upgraded,
}

/// The request the answers are for, from the input's first byte: the method, and whether
/// it offered an upgrade to WebSocket.
fn asked(b: u8) -> (Method, Option<HeaderValue>) {
    let method = match b % 4 {
        0 => Method::GET,
        1 => Method::HEAD,
        2 => Method::POST,
        _ => Method::CONNECT,
    };
    let upgrade = (b & 4 != 0).then(|| HeaderValue::from_static("websocket"));
    (method, upgrade)
}

/// Frames `pieces`, fed in order, as an upstream connection would read them: answers one
/// after the other while the connection stays open, then the end of the stream.
pub fn frame<'a>(
    pieces: impl IntoIterator<Item = &'a [u8]>,
    method: &Method,
    upgrade: Option<&HeaderValue>,
) -> (Vec<Framed>, End) {
    let mut buf = BytesMut::new();
    let mut done = Vec::new();
    let mut current: Option<(Framed, Decoder)> = None;
    for piece in pieces {
        buf.extend_from_slice(piece);
        loop {
            match current.as_mut() {
                None => match parse_for(&mut buf, method, upgrade) {
                    Ok(Some(Head { upgraded: true, .. })) => return (done, End::Upgraded),
                    Ok(Some(h)) => {
                        let fields = h
                            .parts
                            .headers
                            .iter()
                            .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
                            .collect();
                        let reason = h.reason.map(|r| r.to_vec());
                        let resp = (h.parts.status.as_u16(), fields, reason, h.keep_alive);
                        current = Some(((resp.0, resp.1, resp.2, resp.3, Vec::new()), h.decoder));
                    }
                    Ok(None) => break,
                    Err(_) => return (done, End::Refused),
                },
                Some((resp, body)) => match super::read_body(body, &mut buf, &mut resp.4) {
                    Ok(true) => {
                        let Some((resp, _)) = current.take() else {
                            break;
                        };
                        let open = resp.3;
                        done.push(resp);
                        if !open {
                            // The connection ends after this answer: what follows is not read.
                            return (done, End::Clean);
                        }
                    }
                    Ok(false) => break,
                    Err(_) => return (done, End::BadBody),
                },
            }
        }
    }
    // The end of the stream: it ends a body that runs until then, and cuts any other.
    if let Some((resp, mut body)) = current.take() {
        return match body.on_eof() {
            Ok(()) => {
                done.push(resp);
                (done, End::Clean)
            }
            Err(_) => (done, End::NeedMore),
        };
    }
    let end = match buf.is_empty() {
        true => End::Clean,
        false => End::NeedMore,
    };
    (done, end)
}

/// The fuzz property: the answers in `data` (after its first byte, which picks the request)
/// frame the same whole, split in two at several places, and (when short) a byte at a time.
pub fn check(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let (method, upgrade) = asked(first);
    super::same_however_split(rest, |pieces| frame(pieces, &method, upgrade.as_ref()));
}
