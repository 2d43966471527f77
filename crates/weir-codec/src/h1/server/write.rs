//! The write side of a client connection: bytes waiting to go out, written
//! with as few system calls as possible. Small pieces (the head, a small
//! body, chunk framing) are copied into one buffer; large body pieces wait
//! in a queue behind it and go out with it in one vectored write.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use tokio::io::AsyncWrite;

use super::respond::Framing;
use weir_transport::ClientWriter;

/// Body pieces up to this size are copied behind the head.
const INLINE: usize = 16 * 1024;
/// While this much waits, the body is not polled for more. Held pieces
/// pin the upstream connection's read buffer, so a high mark makes it
/// allocate afresh instead of being reused in place: at 1 MiB a 1 MiB
/// response cost ~15 % more CPU (system time: cold pages) than at 256 KiB;
/// 64 KiB was no better than 256.
const HIGH_WATER: usize = 256 * 1024;
/// Slices per vectored write.
const MAX_SLICES: usize = 16;

pub(crate) struct Writer {
    io: ClientWriter,
    /// Copied bytes, written from `at`; before anything in `queue`.
    pub buf: Vec<u8>,
    at: usize,
    queue: VecDeque<Bytes>,
    queued: usize,
}

impl Writer {
    pub fn new(io: ClientWriter) -> Self {
        Writer {
            io,
            buf: Vec::new(),
            at: 0,
            queue: VecDeque::new(),
            queued: 0,
        }
    }

    /// The connection is over. Closing the socket (once the read half is
    /// dropped too) sends the FIN after whatever is queued; the `shutdown`
    /// tokio would do first on drop is a system call that adds nothing.
    pub fn close(self) {
        self.io.forget();
    }

    /// The write half, once everything waiting was written (after a protocol
    /// switch's head).
    pub fn into_io(self) -> ClientWriter {
        self.io
    }

    pub fn is_empty(&self) -> bool {
        self.at == self.buf.len() && self.queue.is_empty()
    }

    /// Whether the body may be polled for more.
    pub fn has_room(&self) -> bool {
        self.buf.len() - self.at + self.queued < HIGH_WATER
    }

    /// Appends copied bytes, keeping their order behind what is queued.
    fn copy(&mut self, b: &[u8]) {
        if self.queue.is_empty() {
            self.buf.extend_from_slice(b);
        } else {
            self.push(Bytes::copy_from_slice(b));
        }
    }

    fn push(&mut self, b: Bytes) {
        self.queued += b.len();
        self.queue.push_back(b);
    }

    /// Adds one piece of body data, framed.
    pub fn data(&mut self, framing: Framing, data: Bytes) {
        if data.is_empty() {
            return;
        }
        if framing == Framing::Chunked {
            let mut line = [0u8; 18];
            let n = chunk_line(&mut line, data.len());
            self.copy(&line[..n]);
        }
        if data.len() <= INLINE && self.queue.is_empty() {
            self.buf.extend_from_slice(&data);
        } else {
            self.push(data);
        }
        if framing == Framing::Chunked {
            self.end_piece(b"\r\n");
        }
    }

    /// The body is over: the last chunk, for a chunked one.
    pub fn end(&mut self, framing: Framing) {
        if framing == Framing::Chunked {
            self.end_piece(b"0\r\n\r\n");
        }
    }

    fn end_piece(&mut self, s: &'static [u8]) {
        if self.queue.is_empty() {
            self.buf.extend_from_slice(s);
        } else {
            self.push(Bytes::from_static(s));
        }
    }

    /// Writes everything that waits.
    pub fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.is_empty() {
            let n = if self.queue.is_empty() {
                std::task::ready!(Pin::new(&mut self.io).poll_write(cx, &self.buf[self.at..]))?
            } else {
                let mut slices = [IoSlice::new(&[]); MAX_SLICES];
                slices[0] = IoSlice::new(&self.buf[self.at..]);
                let mut k = 1;
                for (s, b) in slices[1..].iter_mut().zip(self.queue.iter()) {
                    *s = IoSlice::new(b);
                    k += 1;
                }
                std::task::ready!(Pin::new(&mut self.io).poll_write_vectored(cx, &slices[..k]))?
            };
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.advance(n);
        }
        // A TLS stream holds records it could not write yet; a plain socket, nothing.
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn advance(&mut self, mut n: usize) {
        let copied = (self.buf.len() - self.at).min(n);
        self.at += copied;
        n -= copied;
        if self.at == self.buf.len() {
            // Reused for the next response: no allocation per response.
            self.buf.clear();
            self.at = 0;
        }
        while n > 0 {
            let Some(front) = self.queue.front_mut() else {
                break;
            };
            let take = n.min(front.len());
            front.advance(take);
            self.queued -= take;
            n -= take;
            if front.is_empty() {
                self.queue.pop_front();
            }
        }
    }
}

/// `{size:x}\r\n` into `dst`; its length.
fn chunk_line(dst: &mut [u8; 18], size: usize) -> usize {
    let mut tmp = [0u8; 16];
    let mut i = tmp.len();
    let mut n = size as u64;
    loop {
        i -= 1;
        tmp[i] = b"0123456789abcdef"[(n & 15) as usize];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    let digits = tmp.len() - i;
    dst[..digits].copy_from_slice(&tmp[i..]);
    dst[digits..digits + 2].copy_from_slice(b"\r\n");
    digits + 2
}
