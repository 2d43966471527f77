//! An upstream connection: the socket, a read buffer that outlives one
//! response (bytes of the next read may already be in it), and a write
//! buffer reused for every request head, and the response timer.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use tokio_util::io::poll_read_buf;

use weir_metrics::{Held, GLOBAL};
use weir_transport::{TcpState, UpstreamStream};

/// Read with at least this much room at first; a read that fills the room
/// doubles it, up to `MAX_READ` (large bodies take fewer reads). The buffer
/// stays with the connection, as hyper's did: reused in place once the
/// body's frames are sent, it costs no new pages per response (freeing it
/// at each reuse cost ~40% more system time on 1 MiB responses).
const READ_CHUNK: usize = 16 * 1024;
const MAX_READ: usize = 512 * 1024;
/// The longest wait for a reset after a close (`reset_follows`); a kernel's
/// retransmission timeout is 200 ms or more.
const MAX_RESET_WAIT: Duration = Duration::from_secs(1);

pub struct H1ClientConnection {
    pub(super) io: UpstreamStream,
    pub(super) rbuf: BytesMut,
    pub(super) wbuf: Vec<u8>,
    read_size: usize,
    /// Whether the answer being read had the kernel acknowledge what came
    /// ([`H1ClientConnection::awaiting_rest`]).
    pub(super) acked: bool,
    /// Bounds the wait for a response head; armed by the first exchange.
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    _open: Held,
}

impl H1ClientConnection {
    pub fn new(io: UpstreamStream) -> Self {
        H1ClientConnection {
            io,
            rbuf: BytesMut::new(),
            wbuf: Vec::new(),
            read_size: READ_CHUNK,
            acked: false,
            timer: None,
            _open: Held::new(&GLOBAL.upstream_open),
        }
    }

    /// The stream and the bytes read past the last response head: after a
    /// `101`, the start of the new protocol's byte stream.
    pub fn into_stream(self) -> (UpstreamStream, BytesMut) {
        (self.io, self.rbuf)
    }

    /// Gives back the read buffer of a connection idle in the pool, when it holds nothing
    /// and the connection never needed more than a first read: the next answer makes room
    /// again. One that carried large bodies keeps its buffer (new pages per 1 MiB answer
    /// cost ~40 % more system time).
    pub fn release_idle(&mut self) {
        if self.rbuf.is_empty() && self.read_size == READ_CHUNK {
            self.rbuf = BytesMut::new();
        }
    }

    /// Whether the connection can no longer carry a request: the backend
    /// closed it, reset it, or sent bytes nobody asked for. Never blocks;
    /// costs a system call only when the socket was reported readable.
    pub fn is_closed(&self) -> bool {
        if !self.rbuf.is_empty() {
            return true;
        }
        self.io.peer_gone()
    }

    /// After a clean close with no answer to a request that went out:
    /// whether the backend's kernel reset the connection too. It does when
    /// our bytes reach a socket its application already closed (the stale
    /// keep-alive race) or closed with them unread; then no application read
    /// the request. The reset is that kernel's answer to our bytes, so it may
    /// come as long as they are unacknowledged, and on a busy machine that can
    /// be long after the close (the backend's socket stays locked while its
    /// thread, inside close(), waits for a core). So this waits until our
    /// kernel knows: a reset, or the bytes acknowledged, after which a reset
    /// may still trail an application's close by a round trip. At most a
    /// retransmission timeout (cold path: failures only).
    pub(super) async fn reset_follows(&self) -> bool {
        let started = Instant::now();
        loop {
            match self.io.raw().take_error() {
                // A reset in CLOSE_WAIT (after the peer's FIN) reports EPIPE.
                Ok(Some(e)) => {
                    return matches!(
                        e.kind(),
                        io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
                    )
                }
                Ok(None) => {}
                Err(_) => return false,
            }
            let Some(k) = self.io.tcp_state() else {
                return false;
            };
            let wait = match k.unacked {
                0 => (k.rtt * 2 + Duration::from_millis(1)).min(Duration::from_millis(20)),
                _ => (k.rto + k.rtt * 2).min(MAX_RESET_WAIT),
            };
            if started.elapsed() >= wait {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// How long the backend had been silent, by the kernel's clock, when the
    /// request that just failed went out with no answer: the idle time at which
    /// it closed on us. `None` over TLS (a close_notify counts as data in).
    pub(super) fn silent_when_sent(&self) -> Option<Duration> {
        if self.io.is_tls() {
            return None;
        }
        let k = self.io.tcp_state()?;
        Some(k.since_data_in.saturating_sub(k.since_data_out))
    }

    /// For an idle connection the backend closed with a FIN, pooled `pooled_for`
    /// ago: how long after the last bytes of its last answer the FIN came, by
    /// the kernel's clock (the FIN's acknowledgement is the last thing to
    /// arrive): the backend's idle timeout, give or take its timer's delay,
    /// however late weir looks. `None` for a reset, over TLS (a close_notify
    /// counts as data in), and when bytes came after the connection was pooled
    /// (a 408 before the close, say): its last data in is not an answer then.
    pub fn closed_after(&self, pooled_for: Duration) -> Option<Duration> {
        if self.io.is_tls() {
            return None;
        }
        let k = self.io.tcp_state()?;
        // The kernel's milliseconds are whole ticks, up to 10 ms each.
        let answered_before = k.since_data_in + Duration::from_millis(10) >= pooled_for;
        (k.fin_in && answered_before).then(|| k.since_data_in.saturating_sub(k.since_ack_in))
    }

    /// What the kernel knows about the connection (`transport/tcp_state.rs`).
    pub fn tcp_state(&self) -> Option<TcpState> {
        self.io.tcp_state()
    }

    /// Ready once `deadline` has passed.
    ///
    /// One timer per connection, re-armed lazily: a timer per exchange cost
    /// a timer-wheel insert and removal per request (~450 instructions of
    /// ~21k, callgrind). A later request leaves the timer at its earlier
    /// deadline; when that fires, it moves to the request's own. A timer
    /// firing while the connection sits idle wakes the task that last
    /// polled it, which finds nothing to do.
    pub(super) fn poll_deadline(&mut self, deadline: Instant, cx: &mut Context<'_>) -> Poll<()> {
        let deadline = tokio::time::Instant::from_std(deadline);
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if timer.deadline() > deadline {
            timer.as_mut().reset(deadline);
        }
        loop {
            ready!(timer.as_mut().poll(cx));
            if timer.deadline() >= deadline {
                return Poll::Ready(());
            }
            timer.as_mut().reset(deadline);
        }
    }

    /// For an answer that has begun to arrive and must wait for the rest: the kernel
    /// acknowledges what came now, once per answer, so that a backend writing its answer in
    /// pieces without TCP_NODELAY does not wait 40 ms for each ACK (`transport/acks.rs`).
    pub(super) fn awaiting_rest(&mut self) {
        if !self.acked {
            self.acked = true;
            self.io.ack_now();
        }
    }

    /// Reads more bytes into `rbuf`; `Ok(0)` at EOF.
    #[inline]
    pub(super) fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.rbuf.capacity() - self.rbuf.len() < self.read_size / 4 {
            // Room is made once the answer is there: a request waiting on a slow backend
            // would otherwise hold 16 KiB it has no use for yet (half of what a request in
            // flight cost, docs/BENCHMARKS.md, "What the build rests on").
            if self.rbuf.is_empty() {
                ready!(self.io.poll_read_ready(cx))?;
            }
            self.rbuf.reserve(self.read_size);
        }
        let room = self.rbuf.capacity() - self.rbuf.len();
        // Through AsyncRead rather than try_read: a short read then clears
        // the socket's readiness, so neither the next read nor the EOF
        // check before reuse costs a system call that would only say
        // EAGAIN.
        let n = ready!(poll_read_buf(Pin::new(&mut self.io), cx, &mut self.rbuf))?;
        if n == room && self.read_size < MAX_READ {
            self.read_size *= 2;
        }
        Poll::Ready(Ok(n))
    }
}

/// For the tests of the idle store above (which sweeps read buffers): not part of the codec's
/// interface.
#[doc(hidden)]
impl H1ClientConnection {
    /// The room its read buffer has (for tests of when it is made and given back).
    pub fn read_room(&self) -> usize {
        self.rbuf.capacity()
    }

    /// A read buffer as an answer would have made it.
    pub fn reserve_for_test(&mut self) {
        self.rbuf.reserve(READ_CHUNK);
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    async fn connection() -> (H1ClientConnection, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let (ours, theirs) = tokio::join!(TcpStream::connect(addr), l.accept());
        let c = H1ClientConnection::new(UpstreamStream::Plain(ours.unwrap()));
        (c, theirs.unwrap().0)
    }

    /// A request waiting on its answer holds no room to read it into; the answer makes it.
    #[tokio::test]
    async fn room_to_read_is_made_when_the_answer_comes() {
        let (mut c, mut backend) = connection().await;
        let waiting = std::future::poll_fn(|cx| Poll::Ready(c.poll_fill(cx).is_pending())).await;
        assert!(waiting);
        assert_eq!(c.read_room(), 0);
        backend.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await.unwrap();
        let n = std::future::poll_fn(|cx| c.poll_fill(cx)).await.unwrap();
        assert_eq!(n, 19);
        assert!(c.read_room() >= READ_CHUNK);
    }

    /// How long the backend kept the connection idle before its FIN, by the kernel's
    /// clock: from its answer's arrival to its close's, whenever weir looks.
    #[tokio::test]
    async fn the_idle_close_is_timed_from_the_last_answer() {
        let (mut c, mut backend) = connection().await;
        // On loopback, written is arrived: the backend's clock and the kernel's agree.
        let answering = Instant::now();
        backend.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await.unwrap();
        let answered = Instant::now();
        std::future::poll_fn(|cx| c.poll_fill(cx)).await.unwrap();
        let pooled = Instant::now();
        assert_eq!(c.closed_after(Duration::ZERO), None, "still open");
        tokio::time::sleep(Duration::from_millis(40)).await;
        let at_least = answered.elapsed();
        drop(backend);
        let at_most = answering.elapsed();
        let deadline = Instant::now() + Duration::from_secs(5);
        while c.tcp_state().unwrap().open && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // Looked at late: the measure stays the backend's (give or take a tick of the
        // kernel's clock each way).
        tokio::time::sleep(Duration::from_millis(50)).await;
        let after = c.closed_after(pooled.elapsed()).expect("closed with a FIN");
        let tick = Duration::from_millis(10);
        assert!(
            after + tick >= at_least && after <= at_most + tick,
            "{after:?}, not within {at_least:?}..{at_most:?}"
        );
    }

    /// Bytes after the answer (a 408 before the close): the kernel's last data in is
    /// theirs, and says nothing of how long the backend kept the connection idle.
    #[tokio::test]
    async fn bytes_before_the_close_leave_it_untimed() {
        let (mut c, mut backend) = connection().await;
        backend.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await.unwrap();
        std::future::poll_fn(|cx| c.poll_fill(cx)).await.unwrap();
        let pooled = Instant::now();
        tokio::time::sleep(Duration::from_millis(40)).await;
        backend
            .write_all(b"HTTP/1.1 408 Request Timeout\r\n\r\n")
            .await
            .unwrap();
        drop(backend);
        let deadline = Instant::now() + Duration::from_secs(5);
        while c.tcp_state().unwrap().open && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(c.closed_after(pooled.elapsed()), None);
    }

    /// An idle connection gives back an empty buffer of a first read's size, and keeps one
    /// that holds bytes or that grew for large bodies.
    #[tokio::test]
    async fn an_idle_connection_gives_back_its_empty_read_buffer() {
        let (mut c, _backend) = connection().await;
        c.rbuf.reserve(READ_CHUNK);
        c.release_idle();
        assert_eq!(c.read_room(), 0);
        c.rbuf.extend_from_slice(b"x");
        c.release_idle();
        assert!(c.read_room() > 0);
        c.rbuf.clear();
        c.read_size = READ_CHUNK * 2;
        c.release_idle();
        assert!(c.read_room() > 0);
    }
}
