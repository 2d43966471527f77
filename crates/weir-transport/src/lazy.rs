//! A client socket that joins the runtime's epoll set only once it has to
//! be waited on.
//!
//! HTTP listeners accept a connection only once its request has arrived
//! (TCP_DEFER_ACCEPT), so a `Connection: close` exchange usually reads the
//! request, writes the response and closes without ever waiting on the
//! socket. tokio's `TcpStream` registers every socket with epoll when it is
//! made and removes it when dropped: two `epoll_ctl` calls per connection,
//! ~5 % of weir's CPU per request in http-conn (`perf`), which HAProxy does
//! not spend (it registers a socket only when a read or write would block).
//! Here the first read, peek or write that answers EAGAIN registers the
//! socket (`AsyncFd`), and from then on it is polled as tokio polls its own.
//! tokio has no lazily registered stream, hence by hand.

use std::io::{self, IoSlice, Write};
use std::mem::MaybeUninit;
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{ready, Context, Poll};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};

/// An accepted, non-blocking client socket.
pub struct Socket {
    inner: Arc<Inner>,
}

struct Inner {
    // Declared first so it is dropped first: deregistered while the fd is
    // still open.
    reg: OnceLock<AsyncFd<Fd>>,
    sock: TcpStream,
}

/// The socket's fd for `AsyncFd`, which would close what it owns: the
/// `TcpStream` beside it owns and closes the fd.
struct Fd(RawFd);

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

impl Socket {
    /// `sock` must be in non-blocking mode.
    pub fn new(sock: TcpStream) -> Socket {
        Socket {
            inner: Arc::new(Inner {
                reg: OnceLock::new(),
                sock,
            }),
        }
    }

    /// The socket itself, for what needs no waiting (addresses, options).
    pub fn tcp(&self) -> &TcpStream {
        &self.inner.sock
    }

    pub fn into_split(self) -> (ReadHalf, WriteHalf) {
        (
            ReadHalf {
                inner: self.inner.clone(),
            },
            WriteHalf {
                inner: self.inner,
                shut_on_drop: true,
            },
        )
    }
}

impl Inner {
    /// The registration, made on first need. Needs the runtime (every
    /// caller polls within it).
    fn reg(&self) -> io::Result<&AsyncFd<Fd>> {
        if let Some(r) = self.reg.get() {
            return Ok(r);
        }
        // SAFETY: the fd stays open while the registration lives: `reg` is
        // dropped before `sock`, which owns the fd.
        let r = unsafe {
            AsyncFd::register_with_interest(
                Fd(self.sock.as_raw_fd()),
                Interest::READABLE | Interest::WRITABLE,
            )
        }
        .map_err(|e| e.into_parts().1)?;
        // Only the connection's own task polls its halves, so nobody can
        // have registered in between; were it so, `r` would deregister the
        // fd on drop, so it is kept rather than dropped.
        match self.reg.set(r) {
            Ok(()) => {}
            Err(r) => std::mem::forget(r),
        }
        Ok(self.reg.get().expect("just set"))
    }

    fn recv(&self, buf: &mut ReadBuf<'_>, flags: libc::c_int) -> io::Result<usize> {
        // SAFETY: only written to, by recv, never de-initialised.
        let dst: &mut [MaybeUninit<u8>] = unsafe { buf.unfilled_mut() };
        // SAFETY: recv writes at most `dst.len()` bytes into `dst`, which
        // may be uninitialised; the bytes it reports are initialised below.
        let n = unsafe {
            libc::recv(
                self.sock.as_raw_fd(),
                dst.as_mut_ptr().cast(),
                dst.len(),
                flags,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = n as usize;
        // SAFETY: the kernel initialised the first `n` bytes of `dst`.
        unsafe { buf.assume_init(n) };
        buf.advance(n);
        Ok(n)
    }

    /// A read (or peek with MSG_PEEK) into `buf`, waiting if needed.
    fn poll_recv(
        &self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
        flags: libc::c_int,
    ) -> Poll<io::Result<()>> {
        if self.reg.get().is_none() {
            match self.recv(buf, flags) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => return Poll::Ready(r.map(|_| ())),
            }
        }
        let reg = self.reg()?;
        loop {
            let mut guard = ready!(reg.poll_read_ready(cx))?;
            let want = buf.remaining();
            match self.recv(buf, flags) {
                Ok(n) => {
                    // As tokio does for its own sockets: a read that did not
                    // fill the buffer drained the socket (epoll is
                    // edge-triggered), so the next read waits for epoll
                    // instead of costing a system call that answers EAGAIN.
                    // A peek drains nothing.
                    if flags & libc::MSG_PEEK == 0 && n > 0 && n < want {
                        guard.clear_ready();
                    }
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => guard.clear_ready(),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    /// A write, waiting if needed.
    fn poll_send(
        &self,
        cx: &mut Context<'_>,
        mut send: impl FnMut(&TcpStream) -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        if self.reg.get().is_none() {
            match send(&self.sock) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => return Poll::Ready(r),
            }
        }
        let reg = self.reg()?;
        loop {
            let mut guard = ready!(reg.poll_write_ready(cx))?;
            match send(&self.sock) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => guard.clear_ready(),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => return Poll::Ready(r),
            }
        }
    }
}

pub struct ReadHalf {
    inner: Arc<Inner>,
}

impl ReadHalf {
    /// The socket itself, for what needs no waiting (addresses, options).
    pub fn tcp(&self) -> &TcpStream {
        &self.inner.sock
    }

    /// Whether the socket is in the runtime's epoll set yet.
    pub fn registered(&self) -> bool {
        self.inner.reg.get().is_some()
    }

    /// Like `TcpStream::poll_peek`.
    pub fn poll_peek(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<usize>> {
        let before = buf.filled().len();
        ready!(self.inner.poll_recv(cx, buf, libc::MSG_PEEK))?;
        Poll::Ready(Ok(buf.filled().len() - before))
    }
}

impl AsyncRead for ReadHalf {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.inner.poll_recv(cx, buf, 0)
    }
}

pub struct WriteHalf {
    inner: Arc<Inner>,
    shut_on_drop: bool,
}

impl WriteHalf {
    /// Drops the half without the write shutdown a drop would do (as tokio's
    /// `OwnedWriteHalf::forget`): closing the socket sends the FIN anyway.
    pub fn forget(mut self) {
        self.shut_on_drop = false;
    }
}

/// The socket back from its two halves (they must be one socket's), out of the runtime's
/// epoll set: for a relay that wants tokio's own `TcpStream` (splice).
pub fn reunite(r: ReadHalf, mut w: WriteHalf) -> Result<TcpStream, (ReadHalf, WriteHalf)> {
    if !Arc::ptr_eq(&r.inner, &w.inner) {
        return Err((r, w));
    }
    w.shut_on_drop = false;
    drop(w);
    match Arc::try_unwrap(r.inner) {
        Ok(inner) => {
            let Inner { reg, sock } = inner;
            // Deregistered while the fd is open (the registration borrows it).
            drop(reg);
            Ok(sock)
        }
        // Unreachable: the halves hold the only references.
        Err(inner) => Err((
            ReadHalf {
                inner: inner.clone(),
            },
            WriteHalf {
                inner,
                shut_on_drop: true,
            },
        )),
    }
}

impl Drop for WriteHalf {
    fn drop(&mut self) {
        if self.shut_on_drop {
            let _ = self.inner.sock.shutdown(Shutdown::Write);
        }
    }
}

impl AsyncWrite for WriteHalf {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.inner.poll_send(cx, |mut s| s.write(buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.inner.poll_send(cx, |mut s| s.write_vectored(bufs))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.inner.sock.shutdown(Shutdown::Write))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn pair() -> (Socket, tokio::net::TcpStream) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = tokio::net::TcpStream::connect(l.local_addr().unwrap())
            .await
            .unwrap();
        let (s, _) = l.accept().unwrap();
        s.set_nonblocking(true).unwrap();
        (Socket::new(s), c)
    }

    fn registered(h: &ReadHalf) -> bool {
        h.registered()
    }

    /// Bytes already there are read without registering; a read that must
    /// wait registers and is woken when bytes come.
    #[tokio::test]
    async fn registers_only_when_a_read_must_wait() {
        let (s, mut c) = pair().await;
        let (mut r, mut w) = s.into_split();
        c.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let mut buf = [0u8; 64];
        let n = r.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"GET / HTTP/1.1\r\n\r\n");
        w.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await.unwrap();
        assert!(!registered(&r), "nothing had to wait");

        let reader = tokio::spawn(async move {
            let mut buf = [0u8; 64];
            let n = r.read(&mut buf).await.unwrap();
            (buf[..n].to_vec(), registered(&r))
        });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        c.write_all(b"next").await.unwrap();
        let (got, reg) = reader.await.unwrap();
        assert_eq!(got, b"next");
        assert!(reg, "the read waited, so the socket is registered");

        let mut echo = [0u8; 19];
        c.read_exact(&mut echo).await.unwrap();
        assert_eq!(&echo, b"HTTP/1.1 200 OK\r\n\r\n");
    }

    /// Halves that waited (registered) reunite into a tokio stream that works, and
    /// halves of two sockets do not reunite.
    #[tokio::test]
    async fn halves_reunite_into_one_tokio_stream() {
        let (s, mut c) = pair().await;
        let (mut r, w) = s.into_split();
        // Nothing was sent: the read must wait, so the socket registers.
        let mut buf = [0u8; 8];
        let waited = tokio::time::timeout(std::time::Duration::from_millis(10), r.read(&mut buf));
        assert!(waited.await.is_err());
        assert!(registered(&r));
        let mut t = tokio::net::TcpStream::from_std(reunite(r, w).ok().unwrap()).unwrap();
        t.write_all(b"back").await.unwrap();
        let mut buf = [0u8; 4];
        c.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"back");
        c.write_all(b"more").await.unwrap();
        t.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"more");

        let ((a, _ca), (b, _cb)) = (pair().await, pair().await);
        let (ar, _aw) = a.into_split();
        let (_br, bw) = b.into_split();
        assert!(reunite(ar, bw).is_err());
    }

    /// A write that finds the send buffer full waits for room, and every
    /// byte arrives in order; a peek sees bytes without taking them.
    #[tokio::test]
    async fn a_full_send_buffer_waits_and_peeks_do_not_consume() {
        let (s, mut c) = pair().await;
        let (mut r, mut w) = s.into_split();
        let data: Vec<u8> = (0..8_000_000u32).map(|i| (i % 253) as u8).collect();
        let sent = data.clone();
        let writer = tokio::spawn(async move {
            w.write_all(&sent).await.unwrap();
            w.forget();
        });
        let mut got = vec![0u8; data.len()];
        c.read_exact(&mut got).await.unwrap();
        writer.await.unwrap();
        assert!(got == data);

        c.write_all(b"xy").await.unwrap();
        let mut b = [0u8; 1];
        let mut rb = ReadBuf::new(&mut b);
        let n = std::future::poll_fn(|cx| r.poll_peek(cx, &mut rb))
            .await
            .unwrap();
        assert_eq!((n, rb.filled()), (1, &b"x"[..]));
        let mut two = [0u8; 2];
        r.read_exact(&mut two).await.unwrap();
        assert_eq!(&two, b"xy");
        drop(c);
        assert_eq!(r.read(&mut two).await.unwrap(), 0, "EOF");
    }
}
