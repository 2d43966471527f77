//! Where a client connection is in its life, for the two client timeouts that
//! hyper cannot express separately: the time to send a request head
//! (`header_timeout`) and the keep-alive idle time between requests
//! (`idle_timeout`). hyper's own header timer also runs while a keep-alive
//! connection is idle, which would cap idle time at the header timeout.
//!
//! Everything here is touched only from the connection's own task, so relaxed
//! atomics suffice; they are atomics only because hyper needs `Send + Sync`.

use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

const IDLE: u8 = 0;
const HEAD: u8 = 1;
const BUSY: u8 = 2;

#[derive(Debug)]
pub struct ConnState {
    base: Instant,
    phase: AtomicU8,
    /// Milliseconds since `base` when the current phase began.
    since: AtomicU64,
    busy: AtomicU32,
}

/// What the connection's watchdog should do now.
pub enum Verdict {
    /// Close the connection: the client took too long.
    Expired,
    /// Look again at this instant.
    CheckAt(Instant),
}

impl ConnState {
    /// A new connection starts waiting for its first request head.
    pub fn new() -> Arc<Self> {
        Arc::new(ConnState {
            base: Instant::now(),
            phase: AtomicU8::new(HEAD),
            since: AtomicU64::new(0),
            busy: AtomicU32::new(0),
        })
    }

    fn now_ms(&self) -> u64 {
        self.base.elapsed().as_millis() as u64
    }

    fn enter(&self, phase: u8) {
        self.phase.store(phase, Relaxed);
        self.since.store(self.now_ms(), Relaxed);
    }

    /// Bytes arrived from the client.
    #[inline]
    fn on_read(&self) {
        if self.phase.load(Relaxed) == IDLE {
            self.enter(HEAD);
        }
    }

    /// A request head was parsed; until the returned guard drops (response
    /// fully sent) no client timeout applies.
    pub fn begin_request(self: &Arc<Self>) -> BusyGuard {
        self.busy.fetch_add(1, Relaxed);
        self.phase.store(BUSY, Relaxed);
        BusyGuard(self.clone())
    }

    /// The watchdog is not woken on phase changes (that would cost a timer
    /// operation per request); instead it looks at least every half of the
    /// shorter timeout, so a deadline is enforced within 1.5× its value.
    pub fn verdict(&self, header_timeout: Duration, idle_timeout: Duration) -> Verdict {
        let now = Instant::now();
        let recheck = now + Self::period(header_timeout, idle_timeout);
        let limit = match self.phase.load(Relaxed) {
            IDLE => idle_timeout,
            HEAD => header_timeout,
            _ => return Verdict::CheckAt(recheck),
        };
        let since = self.base + Duration::from_millis(self.since.load(Relaxed));
        let deadline = since + limit;
        if now >= deadline {
            Verdict::Expired
        } else {
            Verdict::CheckAt(deadline.min(recheck))
        }
    }

    /// How often the watchdog looks at a connection at the latest.
    pub fn period(header_timeout: Duration, idle_timeout: Duration) -> Duration {
        header_timeout.min(idle_timeout) / 2
    }
}

/// Held by a request's response body; dropping the last one makes the
/// connection idle.
#[derive(Debug)]
pub struct BusyGuard(Arc<ConnState>);

impl Drop for BusyGuard {
    fn drop(&mut self) {
        if self.0.busy.fetch_sub(1, Relaxed) == 1 {
            self.0.enter(IDLE);
        }
    }
}

pin_project_lite::pin_project! {
    /// The client socket, reporting reads to the connection state.
    pub struct Watched<T> {
        #[pin]
        io: T,
        state: Arc<ConnState>,
    }
}

impl<T> Watched<T> {
    pub fn new(io: T, state: Arc<ConnState>) -> Self {
        Watched { io, state }
    }
}

impl<T: AsyncRead> AsyncRead for Watched<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.project();
        let before = buf.filled().len();
        let r = this.io.poll_read(cx, buf);
        if buf.filled().len() > before {
            this.state.on_read();
        }
        r
    }
}

impl<T: AsyncWrite> AsyncWrite for Watched<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.project().io.poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        self.project().io.poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.project().io.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.project().io.poll_shutdown(cx)
    }
}
