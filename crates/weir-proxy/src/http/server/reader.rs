//! The read side of a client connection: the socket's read half, a buffer
//! that outlives one request (pipelined bytes of the next one may already
//! be in it), and the state of the current request's body.
//!
//! The reader goes with a request that has a body (inside its `ReqBody`)
//! and comes back through the connection's `Home` when the body is done or
//! dropped, so the body is read straight from the socket in the request's
//! own task, with no channel in between.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Mutex;
use std::task::{ready, Context, Poll};

use bytes::BytesMut;
use tokio::io::ReadBuf;
use tokio::net::tcp::OwnedReadHalf;
use tokio_util::io::poll_read_buf;

use crate::h1::decode::Decoder;

/// Reads start with this much room (hyper's first read size too); a read
/// that fills the room doubles it, up to `MAX_READ`, for large uploads.
const READ_CHUNK: usize = 8 * 1024;
const MAX_READ: usize = 256 * 1024;

pub(crate) struct Reader {
    io: OwnedReadHalf,
    pub buf: BytesMut,
    read_size: usize,
    /// The current request's body (`Done` when it has none, or it is read).
    pub body: Decoder,
    /// The stream failed or broke its framing: the connection cannot go on.
    pub broken: bool,
}

impl Reader {
    pub fn new(io: OwnedReadHalf) -> Self {
        Reader {
            io,
            buf: BytesMut::new(),
            read_size: READ_CHUNK,
            body: Decoder::Done,
            broken: false,
        }
    }

    /// Reads more bytes into `buf`; `Ok(0)` at EOF.
    pub fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.buf.capacity() - self.buf.len() < self.read_size / 4 {
            // Reclaims the buffer in place once the last request's bytes
            // are dropped, so steady state allocates nothing.
            self.buf.reserve(self.read_size);
        }
        let room = self.buf.capacity() - self.buf.len();
        // Through AsyncRead: a short read clears the socket's readiness, so
        // the EOF watch while a request is in flight costs no system call.
        let n = ready!(poll_read_buf(Pin::new(&mut self.io), cx, &mut self.buf))?;
        if n == room && self.read_size < MAX_READ {
            self.read_size *= 2;
        }
        Poll::Ready(Ok(n))
    }

    /// While a request is in flight: `Ready(true)` once the client closed
    /// or reset the connection, `Ready(false)` once it sent more bytes (the
    /// next request). A peek, so nothing is copied and the buffer is not
    /// grown while the last request still holds parts of it.
    pub fn poll_gone(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        let mut b = [0u8; 1];
        let mut rb = ReadBuf::new(&mut b);
        match ready!(self.io.poll_peek(cx, &mut rb)) {
            Ok(0) | Err(_) => Poll::Ready(true),
            Ok(_) => Poll::Ready(false),
        }
    }
}

/// Where a request body returns the reader, and how it asks for
/// `100 Continue`. One per connection, made at its first request body.
#[derive(Default)]
pub(crate) struct Home {
    reader: Mutex<Option<Reader>>,
    /// The body was first read and the client waits for `100 Continue`.
    pub wants_continue: AtomicBool,
}

impl Home {
    pub fn put(&self, r: Reader) {
        *self.reader.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
    }

    pub fn take(&self) -> Option<Reader> {
        self.reader.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    pub fn ask_continue(&self) {
        self.wants_continue.store(true, Relaxed);
    }

    pub fn continue_asked(&self) -> bool {
        self.wants_continue.swap(false, Relaxed)
    }
}
