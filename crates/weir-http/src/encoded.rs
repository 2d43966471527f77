//! A response body encoded as it streams (the compress filter, weir-filters' `compress.rs`): gzip,
//! brotli or zstd over the upstream's `ProxyBody`, never holding more than the encoder's
//! window and one output piece.
//!
//! Each frame the upstream has ready goes into the encoder; what the encoder gives out is
//! sent once it reaches `PIECE`, and whatever it holds is flushed as soon as the upstream
//! has nothing more ready, so server-sent events and long polls reach the client as they
//! are made (a flush costs a few bytes of framing, only when the upstream pauses). The end
//! finishes the coding; an upstream error passes on as it is, so the client sees a cut,
//! never a clean end.
//!
//! The wrapped body keeps its slot, its pooling and the endpoint's byte count (the bytes the
//! upstream sent); this one holds the busy guard and the recorder, whose `bytes` are those
//! sent to the client.

use std::io::{self, Write};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http::HeaderMap;
use hyper::body::{Body, Frame, SizeHint};
use weir_config::filter::Encoding;

use crate::conn_state::BusyGuard;
use crate::recorder::Recorder;
use weir_metrics::reason::Reason;
use weir_upstream::error::ExchangeError;

/// Encoded output is sent in pieces of about this size while the upstream keeps data ready.
const PIECE: usize = 32 * 1024;
/// brotli's and zstd's window: 512 KiB (ngx_brotli's default window), so a response's
/// encoder stays bounded whatever its length (the defaults would be 4 MiB and 2 MiB).
const WINDOW_LOG: u32 = 19;

/// The encoder's settings, as the filter was configured.
#[derive(Debug, Clone, Copy)]
pub struct Levels {
    pub gzip: u32,
    pub brotli: u32,
    pub zstd: i32,
}

/// One response's encoder, writing into a buffer that is handed out as frames.
pub(crate) enum Encoder {
    Gzip(flate2::write::GzEncoder<Vec<u8>>),
    Br(Box<brotli::CompressorWriter<Vec<u8>>>),
    Zstd(zstd::stream::write::Encoder<'static, Vec<u8>>),
}

impl Encoder {
    /// `size`: the body's length when known, which lets brotli and zstd size their tables
    /// to it (a 64 KiB body needs far less than the window).
    pub(crate) fn new(e: Encoding, l: Levels, size: Option<u64>) -> io::Result<Encoder> {
        Ok(match e {
            Encoding::Gzip => Encoder::Gzip(flate2::write::GzEncoder::new(
                Vec::new(),
                flate2::Compression::new(l.gzip),
            )),
            Encoding::Br => {
                let params = brotli::enc::BrotliEncoderParams {
                    quality: l.brotli as i32,
                    lgwin: WINDOW_LOG as i32,
                    size_hint: size.map_or(0, |n| n.min(usize::MAX as u64) as usize),
                    ..Default::default()
                };
                Encoder::Br(Box::new(brotli::CompressorWriter::with_params(
                    Vec::new(),
                    4096,
                    &params,
                )))
            }
            Encoding::Zstd => {
                let mut z = zstd::stream::write::Encoder::new(Vec::new(), l.zstd)?;
                z.window_log(WINDOW_LOG)?;
                z.set_pledged_src_size(size)?;
                Encoder::Zstd(z)
            }
        })
    }

    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        match self {
            Encoder::Gzip(g) => g.write_all(data),
            Encoder::Br(b) => b.write_all(data),
            Encoder::Zstd(z) => z.write_all(data),
        }
    }

    /// Pushes out everything given so far, so the client can decode all of it.
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Encoder::Gzip(g) => g.flush(),
            Encoder::Br(b) => b.flush(),
            Encoder::Zstd(z) => z.flush(),
        }
    }

    /// Ends the coding (trailer, last block); the rest of the output is in the buffer.
    fn finish(self) -> io::Result<Vec<u8>> {
        match self {
            Encoder::Gzip(g) => g.finish(),
            Encoder::Br(b) => Ok(b.into_inner()),
            Encoder::Zstd(z) => z.finish(),
        }
    }

    fn out(&mut self) -> &mut Vec<u8> {
        match self {
            Encoder::Gzip(g) => g.get_mut(),
            Encoder::Br(b) => b.get_mut(),
            Encoder::Zstd(z) => z.get_mut(),
        }
    }
}

/// The body of an encoded response over the body it encodes (`B`: weir's `ProxyBody`,
/// whose `Encoded` kind this is).
pub struct Encoded<B> {
    inner: B,
    /// `None` once the coding is finished (or failed).
    enc: Option<Encoder>,
    /// Input went in since the encoder last flushed.
    unflushed: bool,
    /// The upstream's trailers, sent after the coding's last bytes.
    trailers: Option<HeaderMap>,
    done: bool,
    /// Bytes sent to the client.
    sent: u64,
    pub(crate) busy: Option<BusyGuard>,
    pub(crate) rec: Option<Recorder>,
}

impl<B> Encoded<B> {
    /// `inner` encoded by `enc` from now on; the recorder and the busy guard belong to what
    /// the client gets.
    pub(crate) fn new(
        inner: B,
        enc: Encoder,
        busy: Option<BusyGuard>,
        rec: Option<Recorder>,
    ) -> Encoded<B> {
        Encoded {
            inner,
            enc: Some(enc),
            unflushed: false,
            trailers: None,
            done: false,
            sent: 0,
            busy,
            rec,
        }
    }

    pub(crate) fn inner_mut(&mut self) -> &mut B {
        &mut self.inner
    }

    /// The encoder's output so far, as a frame (none when it has none).
    fn take_out(&mut self) -> Option<Frame<Bytes>> {
        let out = self.enc.as_mut()?.out();
        if out.is_empty() {
            return None;
        }
        let v = std::mem::replace(out, Vec::with_capacity(PIECE.min(out.capacity())));
        self.sent += v.len() as u64;
        Some(Frame::data(Bytes::from(v)))
    }

    /// Finishes the coding: its last bytes, or (with none) the trailers or the end.
    fn finish(&mut self) -> Poll<Option<Result<Frame<Bytes>, ExchangeError>>> {
        let last = match self.enc.take().map(Encoder::finish) {
            Some(Ok(v)) => v,
            Some(Err(e)) => return Poll::Ready(Some(Err(self.failed(e)))),
            None => Vec::new(),
        };
        if let Some(r) = self.rec.as_mut() {
            r.end = Some(Instant::now());
        }
        if !last.is_empty() {
            self.sent += last.len() as u64;
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from(last)))));
        }
        self.done = self.trailers.is_none();
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    #[cold]
    fn failed(&mut self, e: io::Error) -> ExchangeError {
        self.enc = None;
        self.done = true;
        ExchangeError::Encode(e)
    }
}

impl<B: Body<Data = Bytes, Error = ExchangeError> + Unpin> Body for Encoded<B> {
    type Data = Bytes;
    type Error = ExchangeError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, ExchangeError>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        if this.enc.is_none() {
            // Finished: the trailers, then the end.
            return this.finish();
        }
        loop {
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => {
                        let enc = this.enc.as_mut().expect("encoding until finished");
                        if let Err(e) = enc.write(&data) {
                            return Poll::Ready(Some(Err(this.failed(e))));
                        }
                        this.unflushed = true;
                        if enc.out().len() >= PIECE {
                            return Poll::Ready(this.take_out().map(Ok));
                        }
                    }
                    Err(frame) => {
                        this.trailers = frame.into_trailers().ok();
                        return this.finish();
                    }
                },
                Poll::Ready(None) => return this.finish(),
                Poll::Ready(Some(Err(e))) => {
                    // The upstream's cut (already counted by the inner body) is the
                    // client's too: no end of coding, no clean end.
                    if let Some(r) = this.rec.as_mut() {
                        r.reason.get_or_insert(Reason::UpstreamReset);
                    }
                    this.enc = None;
                    this.done = true;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Pending => {
                    if std::mem::take(&mut this.unflushed) {
                        let enc = this.enc.as_mut().expect("encoding until finished");
                        if let Err(e) = enc.flush() {
                            return Poll::Ready(Some(Err(this.failed(e))));
                        }
                    }
                    return match this.take_out() {
                        Some(f) => Poll::Ready(Some(Ok(f))),
                        None => Poll::Pending,
                    };
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

impl<B> Drop for Encoded<B> {
    fn drop(&mut self) {
        if let Some(r) = self.rec.as_mut() {
            r.bytes = self.sent;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn levels() -> Levels {
        Levels {
            gzip: 6,
            brotli: 4,
            zstd: 3,
        }
    }

    fn text(n: usize) -> Vec<u8> {
        (0..)
            .map(|i| format!("<p id=\"{i}\">line {i} of some text</p>\n"))
            .flat_map(String::into_bytes)
            .take(n)
            .collect()
    }

    fn decode(e: Encoding, data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        match e {
            Encoding::Gzip => {
                flate2::read::GzDecoder::new(data)
                    .read_to_end(&mut out)
                    .unwrap();
            }
            Encoding::Br => {
                brotli::Decompressor::new(data, 4096)
                    .read_to_end(&mut out)
                    .unwrap();
            }
            Encoding::Zstd => out = zstd::stream::decode_all(data).unwrap(),
        }
        out
    }

    /// Pieces written with a flush after each decode to what went in, and still compress.
    #[test]
    fn flushed_pieces_round_trip() {
        let body = text(300_000);
        for e in [Encoding::Gzip, Encoding::Br, Encoding::Zstd] {
            for size in [None, Some(body.len() as u64)] {
                let mut enc = Encoder::new(e, levels(), size).unwrap();
                let mut wire = Vec::new();
                for piece in body.chunks(7000) {
                    enc.write(piece).unwrap();
                    enc.flush().unwrap();
                    wire.append(enc.out());
                }
                wire.extend(enc.finish().unwrap());
                assert_eq!(decode(e, &wire), body, "{e:?} {size:?}");
                assert!(wire.len() < body.len() / 4, "{e:?}: {}", wire.len());
            }
        }
    }
}
