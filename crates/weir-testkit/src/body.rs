//! Response bodies: pattern bytes, slow chunks, and the wrapper that frees the worker slot
//! when the last byte has been produced.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Empty, Full};
use tokio::time::Sleep;

use crate::ticket::Ticket;

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub(crate) type AnyBody = UnsyncBoxBody<Bytes, BoxError>;

const PATTERN: &[u8; 64] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-\n";
const CHUNK: usize = 64 * 1024; // a multiple of PATTERN's length, so chunks line up

/// The first `n` bytes of the pattern `/bytes/{n}` and `--body-size` serve
/// (byte `i` is `PATTERN[i % 64]`, printable ASCII).
pub fn pattern(n: usize) -> Bytes {
    PATTERN
        .iter()
        .copied()
        .cycle()
        .take(n)
        .collect::<Vec<u8>>()
        .into()
}

fn pattern_chunk() -> Bytes {
    static CHUNK_BYTES: OnceLock<Bytes> = OnceLock::new();
    CHUNK_BYTES.get_or_init(|| pattern(CHUNK)).clone()
}

pub(crate) fn full(b: impl Into<Bytes>) -> AnyBody {
    Full::new(b.into())
        .map_err(|e: Infallible| match e {})
        .boxed_unsync()
}

pub(crate) fn empty() -> AnyBody {
    Empty::new()
        .map_err(|e: Infallible| match e {})
        .boxed_unsync()
}

/// `n` pattern bytes with a known length, served from one shared chunk (no per-request copy).
pub(crate) fn pattern_body(n: u64) -> AnyBody {
    PatternBody { remaining: n }.boxed_unsync()
}

struct PatternBody {
    remaining: u64,
}

impl Body for PatternBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if self.remaining == 0 {
            return Poll::Ready(None);
        }
        let n = self.remaining.min(CHUNK as u64);
        self.remaining -= n;
        Poll::Ready(Some(Ok(Frame::data(pattern_chunk().slice(..n as usize)))))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

/// `n` chunks of `chunk i\n`, `delay` apart; unknown length, so hyper sends it chunked.
pub(crate) fn chunked_body(n: u64, delay: Duration) -> AnyBody {
    ChunkedBody {
        next: 0,
        total: n,
        delay,
        sleep: None,
    }
    .boxed_unsync()
}

struct ChunkedBody {
    next: u64,
    total: u64,
    delay: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
}

impl Body for ChunkedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if self.next >= self.total {
            return Poll::Ready(None);
        }
        if self.next > 0 && !self.delay.is_zero() {
            let delay = self.delay;
            let sleep = self
                .sleep
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(delay)));
            ready!(sleep.as_mut().poll(cx));
            self.sleep = None;
        }
        let chunk = format!("chunk {}\n", self.next);
        self.next += 1;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(chunk)))))
    }

    fn is_end_stream(&self) -> bool {
        self.next >= self.total
    }
}

/// Holds the request's [`Ticket`] (worker slot, in-flight count, connection busy mark) until
/// the body has produced its last frame: a worker is busy until its response is written.
pub(crate) struct Guarded {
    inner: AnyBody,
    ticket: Option<Ticket>,
}

impl Guarded {
    pub(crate) fn new(inner: AnyBody, ticket: Ticket) -> Guarded {
        let ticket = (!inner.is_end_stream()).then_some(ticket);
        Guarded { inner, ticket }
    }
}

impl Body for Guarded {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let frame = ready!(Pin::new(&mut self.inner).poll_frame(cx));
        // Release before hyper writes the last bytes, so a client that has the whole
        // response never observes the request as still in flight.
        if !matches!(frame, Some(Ok(_))) || self.inner.is_end_stream() {
            self.ticket = None;
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
