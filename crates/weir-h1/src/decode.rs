//! Message body framing, for responses from upstreams and requests from
//! clients alike: Content-Length, chunked (extensions ignored, trailers
//! read and discarded) or close-delimited (responses only). The decoder
//! takes bytes from the connection's read buffer as they arrive, in pieces
//! of any size.

use bytes::{Buf, Bytes, BytesMut};

/// Why a body could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    #[error("{0}")]
    Invalid(&'static str),
    #[error("connection closed before the body was complete")]
    ClosedEarly,
}

type Error = DecodeError;

/// Chunk extensions and trailers together may not exceed this.
const MAX_CHUNK_OVERHEAD: usize = 16 * 1024;

#[derive(Debug)]
pub enum Decoder {
    /// This many bytes are still to come.
    Length(u64),
    Chunked(Chunked),
    /// The body ends when the connection does.
    Eof,
    Done,
}

impl Decoder {
    pub fn length(n: u64) -> Self {
        if n == 0 {
            Decoder::Done
        } else {
            Decoder::Length(n)
        }
    }

    pub fn chunked() -> Self {
        Decoder::Chunked(Chunked::default())
    }

    pub fn is_done(&self) -> bool {
        matches!(self, Decoder::Done)
    }

    /// Whether the body ends only when the connection does (a response without a length).
    pub fn is_eof_delimited(&self) -> bool {
        matches!(self, Decoder::Eof)
    }

    /// Bytes still expected, when known.
    pub fn remaining(&self) -> Option<u64> {
        match self {
            Decoder::Length(n) => Some(*n),
            Decoder::Done => Some(0),
            _ => None,
        }
    }

    /// The next piece of body data in `buf`, if any; `Ok(None)` means more
    /// input is needed, or the body is done (see `is_done`).
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Bytes>, Error> {
        match self {
            Decoder::Done => Ok(None),
            _ if buf.is_empty() => Ok(None),
            Decoder::Eof => Ok(Some(buf.split().freeze())),
            Decoder::Length(n) => {
                let take = (*n).min(buf.len() as u64);
                *n -= take;
                if *n == 0 {
                    *self = Decoder::Done;
                }
                Ok(Some(buf.split_to(take as usize).freeze()))
            }
            Decoder::Chunked(c) => {
                let data = c.decode(buf)?;
                if c.state == State::Done {
                    *self = Decoder::Done;
                }
                Ok(data)
            }
        }
    }

    /// The connection reached EOF: fine only for a close-delimited body.
    pub fn on_eof(&mut self) -> Result<(), Error> {
        match self {
            Decoder::Eof | Decoder::Done => {
                *self = Decoder::Done;
                Ok(())
            }
            _ => Err(Error::ClosedEarly),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    #[default]
    Size,
    /// Whitespace after the size.
    SizeLws,
    /// After `;`: optional whitespace, then an extension's name.
    ExtStart,
    ExtName,
    /// After a name: whitespace, then `;`, `=` or the line's end.
    ExtAfterName,
    /// After `=`: whitespace, then a token or a quoted string.
    ExtValStart,
    ExtValToken,
    ExtQuoted,
    ExtQuotedEscape,
    /// After a value: whitespace, then `;` or the line's end.
    ExtAfterVal,
    SizeLf,
    Data,
    DataCr,
    DataLf,
    /// The start of a trailer line: a field name, or the empty last line.
    Trailer,
    TrailerName,
    TrailerValue,
    TrailerLf,
    Done,
}

/// RFC 9110 §5.6.2: the characters of a token (field names, extension names).
fn tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[derive(Debug, Default)]
pub struct Chunked {
    state: State,
    /// The chunk size being read, then what is left of the chunk's data.
    size: u64,
    digits: u8,
    /// Length of the trailer line being read.
    line: usize,
    /// Extension and trailer bytes so far.
    overhead: usize,
}

fn bad(what: &'static str) -> Error {
    Error::Invalid(what)
}

impl Chunked {
    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Bytes>, Error> {
        loop {
            match self.state {
                State::Done => return Ok(None),
                State::Data => {
                    if buf.is_empty() {
                        return Ok(None);
                    }
                    let take = self.size.min(buf.len() as u64);
                    self.size -= take;
                    if self.size == 0 {
                        self.state = State::DataCr;
                    }
                    return Ok(Some(buf.split_to(take as usize).freeze()));
                }
                _ => {}
            }
            // Framing bytes, one at a time up to the next data or the end.
            let mut used = 0;
            for &b in buf.iter() {
                used += 1;
                self.step(b)?;
                if matches!(self.state, State::Data | State::Done) {
                    break;
                }
            }
            buf.advance(used);
            if !matches!(self.state, State::Data | State::Done) {
                return Ok(None);
            }
        }
    }

    fn step(&mut self, b: u8) -> Result<(), Error> {
        self.state = match (self.state, b) {
            (State::Size, _) if (b as char).is_ascii_hexdigit() => {
                self.digits += 1;
                if self.digits > 16 {
                    return Err(bad("chunk size too large"));
                }
                self.size = self.size << 4 | u64::from((b as char).to_digit(16).unwrap_or(0));
                State::Size
            }
            (State::Size, b'\r') if self.digits > 0 => State::SizeLf,
            (State::Size, b' ' | b'\t') if self.digits > 0 => State::SizeLws,
            (State::Size, b';') if self.digits > 0 => State::ExtStart,
            (State::Size, _) => return Err(bad("invalid chunk size")),
            (State::SizeLws, b' ' | b'\t') => State::SizeLws,
            (State::SizeLws, b';') => State::ExtStart,
            (State::SizeLws, b'\r') => State::SizeLf,
            (State::SizeLws, _) => return Err(bad("invalid chunk size")),
            // RFC 9112 §7.1.1: `*( BWS ";" BWS name [ BWS "=" BWS value ] )`,
            // a name a token, a value a token or a quoted string.
            (
                ext @ (State::ExtStart
                | State::ExtName
                | State::ExtAfterName
                | State::ExtValStart
                | State::ExtValToken
                | State::ExtQuoted
                | State::ExtQuotedEscape
                | State::ExtAfterVal),
                b,
            ) => {
                self.overhead += 1;
                if self.overhead > MAX_CHUNK_OVERHEAD {
                    return Err(bad("chunk extensions too large"));
                }
                extension(ext, b)?
            }
            (State::SizeLf, b'\n') => {
                self.digits = 0;
                if self.size == 0 {
                    self.line = 0;
                    State::Trailer
                } else {
                    State::Data
                }
            }
            (State::SizeLf, _) => return Err(bad("chunk size not followed by CRLF")),
            (State::DataCr, b'\r') => State::DataLf,
            (State::DataLf, b'\n') => State::Size,
            (State::DataCr | State::DataLf, _) => {
                return Err(bad("chunk data not followed by CRLF"))
            }
            (State::Trailer, b'\r') => State::TrailerLf,
            // A field line: `name ":" OWS value OWS` (RFC 9112 §5); no
            // whitespace before the name (obs-fold) or the colon.
            (State::Trailer | State::TrailerName | State::TrailerValue, _) => {
                self.line += 1;
                self.overhead += 1;
                if self.overhead > MAX_CHUNK_OVERHEAD {
                    return Err(bad("trailers too large"));
                }
                match (self.state, b) {
                    (State::Trailer, b) if tchar(b) => State::TrailerName,
                    (State::TrailerName, b) if tchar(b) => State::TrailerName,
                    (State::TrailerName, b':') => State::TrailerValue,
                    (State::TrailerValue, b'\r') => State::TrailerLf,
                    // SP, HTAB, visible ASCII, obs-text.
                    (State::TrailerValue, b' ' | b'\t' | 0x21..=0x7e | 0x80..=0xff) => {
                        State::TrailerValue
                    }
                    (_, b'\n') => return Err(bad("bare LF in trailers")),
                    _ => return Err(bad("invalid trailer field")),
                }
            }
            (State::TrailerLf, b'\n') if self.line == 0 => State::Done,
            (State::TrailerLf, b'\n') => {
                self.line = 0;
                State::Trailer
            }
            (State::TrailerLf, _) => return Err(bad("bare CR in trailers")),
            (State::Data | State::Done, _) => self.state,
        };
        Ok(())
    }
}

/// One byte of a chunk's extensions.
fn extension(s: State, b: u8) -> Result<State, Error> {
    let ws = b == b' ' || b == b'\t';
    Ok(match (s, b) {
        (State::ExtQuoted, b'"') => State::ExtAfterVal,
        (State::ExtQuoted, b'\\') => State::ExtQuotedEscape,
        // qdtext: HTAB, SP, visible ASCII but `"` and `\`, obs-text.
        (State::ExtQuoted, b'\t' | b' ' | 0x21..=0x7e | 0x80..=0xff) => State::ExtQuoted,
        (State::ExtQuotedEscape, b'\t' | b' ' | 0x21..=0x7e | 0x80..=0xff) => State::ExtQuoted,
        (State::ExtQuoted | State::ExtQuotedEscape, _) => {
            return Err(bad("invalid quoted chunk extension value"))
        }
        (State::ExtStart, _) if ws => State::ExtStart,
        (State::ExtStart | State::ExtName, b) if tchar(b) => State::ExtName,
        (State::ExtName | State::ExtAfterName, _) if ws => State::ExtAfterName,
        (State::ExtValStart, _) if ws => State::ExtValStart,
        (State::ExtValStart, b'"') => State::ExtQuoted,
        (State::ExtValStart | State::ExtValToken, b) if tchar(b) => State::ExtValToken,
        (State::ExtValToken | State::ExtAfterVal, _) if ws => State::ExtAfterVal,
        (State::ExtName | State::ExtAfterName, b'=') => State::ExtValStart,
        (State::ExtName | State::ExtAfterName | State::ExtValToken | State::ExtAfterVal, b';') => {
            State::ExtStart
        }
        (State::ExtName | State::ExtAfterName | State::ExtValToken | State::ExtAfterVal, b'\r') => {
            State::SizeLf
        }
        (_, b'\n') => return Err(bad("newline in chunk extension")),
        _ => return Err(bad("invalid chunk extension")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `input` fed in pieces of `step` bytes; the data, and whether
    /// the body ended.
    fn run(mut d: Decoder, input: &[u8], step: usize) -> Result<(Vec<u8>, bool, usize), Error> {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for piece in input.chunks(step.max(1)) {
            buf.extend_from_slice(piece);
            while let Some(data) = d.decode(&mut buf)? {
                assert!(!data.is_empty());
                out.extend_from_slice(&data);
            }
            if d.is_done() {
                break;
            }
        }
        Ok((out, d.is_done(), buf.len()))
    }

    fn chunked(input: &str) -> Result<(Vec<u8>, bool, usize), Error> {
        let whole = run(Decoder::chunked(), input.as_bytes(), input.len())?;
        for step in 1..input.len() {
            let split = run(Decoder::chunked(), input.as_bytes(), step)?;
            assert_eq!(split.0, whole.0, "step {step}");
            assert_eq!(split.1, whole.1, "step {step}");
        }
        Ok(whole)
    }

    #[test]
    fn chunked_bodies() {
        let (data, done, _) = chunked("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n").unwrap();
        assert_eq!(data, b"hello world");
        assert!(done);
        // Extensions, whitespace, upper-case hex.
        let (data, done, _) =
            chunked("A;name=value;x\r\n0123456789\r\n1 \t;q=\"a\"\r\n!\r\n0;last\r\n\r\n").unwrap();
        assert_eq!(data, b"0123456789!");
        assert!(done);
        // Whitespace around `;` and `=`, quoted values with escapes.
        let (data, ..) = chunked("5 ; a = b ;c=\"x\\\"y; z\" \r\nhello\r\n0\r\n\r\n").unwrap();
        assert_eq!(data, b"hello");
        // Trailers are read and dropped.
        let (data, done, _) = chunked("3\r\nabc\r\n0\r\nx-sum: 1\r\nx-b: 2\r\n\r\n").unwrap();
        assert_eq!(data, b"abc");
        assert!(done);
        // Not finished yet.
        let (data, done, _) = chunked("3\r\nabc\r\n0\r\nx: 1\r\n").unwrap();
        assert_eq!(data, b"abc");
        assert!(!done);
        // Bytes after the body stay in the buffer.
        let (_, done, left) = run(Decoder::chunked(), b"0\r\n\r\nHTTP", 100).unwrap();
        assert!(done);
        assert_eq!(left, 4);
        // Leading zeros are still 16 digits at most.
        let (data, ..) = chunked("0000000000000001\r\nz\r\n0\r\n\r\n").unwrap();
        assert_eq!(data, b"z");
    }

    #[test]
    fn bad_chunks() {
        for bad in [
            "x\r\n",
            "\r\n",
            ";ext\r\n",
            "5\nhello\r\n",
            "3\r\nabcd\r\n",
            "3\r\nabc\n0\r\n\r\n",
            "3 4\r\nabc\r\n",
            "-3\r\nabc\r\n",
            "10000000000000000\r\n",
            "3;a\nb\r\nabc\r\n",
            "0\r\nx: 1\n\r\n",
            "0\r\n\rx",
            // Extensions without a name, with a bad value, unterminated quotes.
            "5;\r\nhello\r\n0\r\n\r\n",
            "5; ;a\r\nhello\r\n0\r\n\r\n",
            "5;a=\r\nhello\r\n0\r\n\r\n",
            "5;a=b c\r\nhello\r\n0\r\n\r\n",
            "5;a=\"b\r\nhello\r\n0\r\n\r\n",
            "5;a@b\r\nhello\r\n0\r\n\r\n",
            // Trailer lines that are not field lines.
            "0\r\nnocolon\r\n\r\n",
            "0\r\n: empty name\r\n\r\n",
            "0\r\n folded: x\r\n\r\n",
            "0\r\nx : space before colon\r\n\r\n",
            "0\r\nx: \x01\r\n\r\n",
        ] {
            assert!(
                run(Decoder::chunked(), bad.as_bytes(), 100).is_err(),
                "{bad:?}"
            );
            assert!(
                run(Decoder::chunked(), bad.as_bytes(), 1).is_err(),
                "{bad:?}"
            );
        }
        let huge = format!("1;{}\r\n", "e".repeat(MAX_CHUNK_OVERHEAD + 1));
        assert!(run(Decoder::chunked(), huge.as_bytes(), 4096).is_err());
    }

    #[test]
    fn length_and_eof() {
        let (data, done, left) = run(Decoder::length(5), b"hello world", 3).unwrap();
        assert_eq!(data, b"hello");
        assert!(done);
        assert_eq!(left, 1); // the piece that crossed the end
        assert!(Decoder::length(0).is_done());
        let mut d = Decoder::length(3);
        assert!(d.on_eof().is_err());
        let (data, done, _) = run(Decoder::Eof, b"all of it", 2).unwrap();
        assert_eq!(data, b"all of it");
        assert!(!done);
        let mut d = Decoder::Eof;
        d.on_eof().unwrap();
        assert!(d.is_done());
    }
}
