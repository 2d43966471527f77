//! Request framing over arbitrary bytes, for the cargo-fuzz target in
//! `crates/weir-h1/fuzz/` and for a unit test that feeds it random
//! input (nightly is not always at hand): a byte stream read as pipelined
//! requests, heads and bodies, must never panic and must frame the same
//! whether it arrives whole or split anywhere. `response.rs` holds the same
//! property for what an upstream sends back.

pub mod response;

use std::fmt::Debug;

use bytes::BytesMut;

use crate::decode::Decoder;
use crate::request::parse;

/// A head limit small enough for fuzz inputs to reach it.
const MAX_HEAD: usize = 8 * 1024;

/// One framed request: method, target, header fields, body.
pub type Framed = (String, String, Vec<(String, Vec<u8>)>, Vec<u8>);

/// How the stream ended.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    /// Every byte belonged to a complete request.
    Clean,
    /// A head or body is unfinished.
    NeedMore,
    /// A head was refused, with this status (`None`: no answer).
    Refused(Option<u16>),
    /// A body broke its framing.
    BadBody,
}

/// Frames `pieces`, fed in order, as a client connection would see them.
pub fn frame<'a>(pieces: impl IntoIterator<Item = &'a [u8]>) -> (Vec<Framed>, End) {
    let mut buf = BytesMut::new();
    let mut done = Vec::new();
    let mut current: Option<(Framed, Decoder)> = None;
    for piece in pieces {
        buf.extend_from_slice(piece);
        loop {
            match current.as_mut() {
                None => match parse(&mut buf, MAX_HEAD) {
                    Ok(Some(h)) => {
                        let p = h.parts;
                        let fields = p
                            .headers
                            .iter()
                            .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
                            .collect();
                        let req = (p.method.to_string(), p.uri.to_string(), fields, Vec::new());
                        current = Some((req, h.body));
                    }
                    Ok(None) => break,
                    Err(e) => return (done, End::Refused(e.status())),
                },
                Some((req, body)) => match read_body(body, &mut buf, &mut req.3) {
                    Ok(true) => {
                        if let Some((req, _)) = current.take() {
                            done.push(req);
                        }
                    }
                    Ok(false) => break,
                    Err(_) => return (done, End::BadBody),
                },
            }
        }
    }
    let end = match (&current, buf.is_empty()) {
        (None, true) => End::Clean,
        _ => End::NeedMore,
    };
    (done, end)
}

/// The fuzz property: `data` frames the same whole, split in two at
/// several places, and (when short) a byte at a time.
pub fn check(data: &[u8]) {
    same_however_split(data, |pieces| frame(pieces));
}

/// Feeds what `buf` holds of `body` into `out`: `Ok(true)` once the body is whole,
/// `Ok(false)` when it needs more bytes.
fn read_body(
    body: &mut Decoder,
    buf: &mut BytesMut,
    out: &mut Vec<u8>,
) -> Result<bool, crate::decode::DecodeError> {
    while !body.is_done() {
        match body.decode(buf)? {
            Some(data) => out.extend_from_slice(&data),
            None => return Ok(body.is_done()),
        }
    }
    Ok(true)
}

/// Asserts that `frame` gives the same for `data` whole, split in two at several places,
/// and (when short) a byte at a time.
fn same_however_split<T: PartialEq + Debug>(data: &[u8], frame: impl Fn(Vec<&[u8]>) -> T) {
    let whole = frame(vec![data]);
    let cuts = data.len().min(32);
    for i in 0..=cuts {
        let at = i * data.len() / cuts.max(1);
        let (a, b) = data.split_at(at);
        assert_eq!(frame(vec![a, b]), whole, "split at {at}");
    }
    if data.len() <= 512 {
        assert_eq!(frame(data.chunks(1).collect()), whole, "byte by byte");
    }
}
