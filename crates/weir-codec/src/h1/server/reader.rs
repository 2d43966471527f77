//! The read side of a client connection: the socket's read half, a buffer
//! that outlives one request (pipelined bytes of the next one may already
//! be in it), and the state of the current request's body.
//!
//! While a request body may be read, the reader waits in the connection's
//! `Home`, where the body (polled in the connection's own task) reads it
//! straight from the socket, with no channel in between; the connection
//! takes it back once the body is done or dropped.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Mutex;
use std::task::{ready, Context, Poll};

use bytes::BytesMut;
use tokio_util::io::poll_read_buf;

use weir_h1::decode::Decoder;
use weir_transport::ClientReader;

/// Reads start with this much room (hyper's first read size too); a read
/// that fills the room doubles it, up to `MAX_READ`, for large uploads.
pub(crate) const READ_CHUNK: usize = 8 * 1024;
const MAX_READ: usize = 256 * 1024;

pub(crate) struct Reader {
    io: ClientReader,
    pub buf: BytesMut,
    read_size: usize,
    /// The current request's body (`Done` when it has none, or it is read).
    pub body: Decoder,
    /// The stream failed or broke its framing: the connection cannot go on.
    pub broken: bool,
    /// Whether the request being read had the kernel acknowledge what came
    /// ([`Reader::awaiting_rest`]).
    pub acked: bool,
}

impl Reader {
    /// The read half and what was already read from it (by the protocol selection, with
    /// a first read of `READ_CHUNK`'s room: one that filled it grows the next, as here).
    pub fn resume(io: ClientReader, buf: BytesMut) -> Self {
        let read_size = match buf.len() >= READ_CHUNK {
            true => READ_CHUNK * 2,
            false => READ_CHUNK,
        };
        Reader {
            io,
            buf,
            read_size,
            body: Decoder::Done,
            broken: false,
            acked: false,
        }
    }

    /// For a request that has begun to arrive and must wait for the rest: the kernel
    /// acknowledges what came now, once per request, so that a client writing its request in
    /// pieces without TCP_NODELAY (a head, then its body) does not wait 40 ms for each ACK
    /// (`transport/acks.rs`).
    pub fn awaiting_rest(&mut self) {
        if !self.acked {
            self.acked = true;
            self.io.ack_now();
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

    /// The read half and the bytes read past the last request head (after a
    /// protocol switch: the new protocol's first bytes).
    pub fn into_parts(self) -> (ClientReader, BytesMut) {
        (self.io, self.buf)
    }

    /// Whether waiting on the socket would cost no more system calls.
    pub fn registered(&self) -> bool {
        self.io.registered()
    }

    /// While a request is in flight: `Ready(true)` once the client closed
    /// or reset the connection, `Ready(false)` once it sent more bytes (the
    /// next request). A peek, so nothing is copied and the buffer is not
    /// grown while the last request still holds parts of it.
    pub fn poll_gone(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        self.io.poll_gone(cx)
    }
}

/// Where the reader stays while a request body may read from it: the
/// body holds only a pointer here, so the request types that carry it stay
/// small (they are moved several times per request). One per connection,
/// made at its first request body.
#[derive(Default)]
pub(crate) struct Home {
    slot: Mutex<Slot>,
    /// The body was first read and the client waits for `100 Continue`.
    wants_continue: AtomicBool,
}

#[derive(Default)]
pub(crate) struct Slot {
    pub reader: Option<Reader>,
    /// A body still reads from the reader: the connection must not take it.
    pub lent: bool,
}

impl Home {
    /// Lends the reader to a request body.
    pub fn lend(&self, r: Reader) {
        *self.lock() = Slot {
            reader: Some(r),
            lent: true,
        };
    }

    /// The reader back, once no body reads from it.
    pub fn take(&self) -> Option<Reader> {
        let mut slot = self.lock();
        match slot.lent {
            true => None,
            false => slot.reader.take(),
        }
    }

    pub fn lock(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// weir sends the client bytes while a body still reads the request: the body's next
    /// wait acknowledges what came at once anew ([`Reader::awaiting_rest`]; `conn.rs`'s
    /// `flush_during_request`).
    pub fn rearm_ack(&self) {
        if let Some(r) = self.lock().reader.as_mut() {
            r.acked = false;
        }
    }

    pub fn ask_continue(&self) {
        self.wants_continue.store(true, Relaxed);
    }

    pub fn continue_asked(&self) -> bool {
        self.wants_continue.swap(false, Relaxed)
    }
}
