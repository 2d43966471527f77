//! Relaying bytes both ways. Each direction ends on EOF by half-closing the
//! other side (so protocols that shut down writing, then read, still work);
//! the session ends when both directions are done, on an error, or when no
//! byte moved either way for `idle_timeout`.

use std::io;
use std::net::Shutdown;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use crate::activity::Activity;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio::time::Sleep;

/// Relays until done; bytes moved are added to `sent` (client → upstream)
/// and `received` (upstream → client) as they move. `timer` becomes the
/// idle timer (the session's connect timer, already registered: moving it
/// to a later deadline costs no timer-wheel operation).
pub async fn relay(
    mut client: TcpStream,
    mut upstream: TcpStream,
    idle: Duration,
    sent: &AtomicU64,
    received: &AtomicU64,
    timer: Pin<&mut Sleep>,
) -> io::Result<()> {
    let activity = Activity::new();
    let one_done = AtomicBool::new(false);
    let (client_r, client_w) = client.split();
    let (upstream_r, upstream_w) = upstream.split();
    let both = async {
        tokio::try_join!(
            one_way(client_r, upstream_w, &activity, &one_done, sent),
            one_way(upstream_r, client_w, &activity, &one_done, received)
        )
    };
    until_idle(both, &activity, idle, timer).await
}

/// Runs `both` (the two directions) until done, or until no byte moved for `idle`.
pub(super) async fn until_idle<T>(
    both: impl std::future::Future<Output = io::Result<T>>,
    activity: &Activity,
    idle: Duration,
    mut timer: Pin<&mut Sleep>,
) -> io::Result<()> {
    tokio::pin!(both);
    loop {
        timer.as_mut().reset(activity.idle_deadline(idle).into());
        tokio::select! {
            biased;
            r = both.as_mut() => return r.map(|_| ()),
            _ = timer.as_mut() => {
                if Instant::now() >= activity.idle_deadline(idle) {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "idle timeout"));
                }
            }
        }
    }
}

async fn one_way(
    mut src: ReadHalf<'_>,
    mut dst: WriteHalf<'_>,
    activity: &Activity,
    one_done: &AtomicBool,
    count: &AtomicU64,
) -> io::Result<u64> {
    // Short exchanges go through a small buffer: a splice pipe costs six
    // system calls to create and close, more than a few reads and writes.
    // Once a read fills the buffer the stream is bulk, and splice takes over.
    #[cfg(target_os = "linux")]
    let n = match copy_small(&mut src, &mut dst, activity, count).await? {
        Copied::Done(n) => n,
        Copied::Bulk(n) => {
            n + crate::splice::copy(src.as_ref(), dst.as_ref(), activity, count).await?
        }
    };
    #[cfg(not(target_os = "linux"))]
    let n = copy_buffered(&mut src, &mut dst, activity, count).await?;
    // Pass the EOF on: the other direction may still be sending. If it has
    // ended too, the session closes both sockets next, and close sends the
    // FIN: a shutdown first would be a wasted system call.
    if !one_done.swap(true, Relaxed) {
        let _ = socket2::SockRef::from(dst.as_ref()).shutdown(Shutdown::Write);
    }
    Ok(n)
}

/// What `copy_small` did: reached EOF, or met a bulk stream.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
enum Copied {
    Done(u64),
    Bulk(u64),
}

/// Bytes per read before a stream counts as bulk.
pub(super) const SMALL: usize = 16 * 1024;

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
async fn copy_small(
    src: &mut ReadHalf<'_>,
    dst: &mut WriteHalf<'_>,
    activity: &Activity,
    count: &AtomicU64,
) -> io::Result<Copied> {
    // Not zeroed: reads go into spare capacity. Zeroing 16 KiB per direction
    // was more than half of a short session's instructions. Allocated for
    // each read and given back while a read waits: an idle session holds no
    // buffer (it held 32 KiB).
    let mut buf = Vec::new();
    let mut total = 0u64;
    loop {
        let n = read_releasing(src, &mut buf).await?;
        if n == 0 {
            return Ok(Copied::Done(total));
        }
        activity.touch();
        dst.write_all(&buf).await?;
        total += n as u64;
        count.fetch_add(n as u64, Relaxed);
        if n >= SMALL {
            return Ok(Copied::Bulk(total));
        }
    }
}

/// Reads into `buf`'s capacity, replacing what it held. Through tokio's
/// AsyncRead, because a read that does not fill the buffer clears the
/// socket's readiness there: the next read waits for epoll instead of
/// costing a system call that answers EAGAIN.
async fn read_some(src: &mut ReadHalf<'_>, buf: &mut Vec<u8>) -> io::Result<usize> {
    buf.clear();
    src.read_buf(buf).await
}

/// Reads into `buf` (given `SMALL` bytes of room), replacing what it held;
/// while the read waits, the buffer goes back to the allocator. Through
/// tokio's AsyncRead, for the reason given at `read_some`.
pub(super) async fn read_releasing<R: tokio::io::AsyncRead + Unpin>(
    src: &mut R,
    buf: &mut Vec<u8>,
) -> io::Result<usize> {
    std::future::poll_fn(|cx| {
        buf.clear();
        if buf.capacity() < SMALL {
            buf.reserve_exact(SMALL);
        }
        let mut rb = tokio::io::ReadBuf::uninit(buf.spare_capacity_mut());
        match Pin::new(&mut *src).poll_read(cx, &mut rb) {
            std::task::Poll::Pending => {
                *buf = Vec::new();
                std::task::Poll::Pending
            }
            std::task::Poll::Ready(r) => {
                let n = rb.filled().len();
                // SAFETY: poll_read initialised the first n bytes of the spare capacity.
                unsafe { buf.set_len(n) };
                std::task::Poll::Ready(r.map(|()| n))
            }
        }
    })
    .await
}

/// The portable path: read into a buffer, write it out.
#[cfg_attr(target_os = "linux", allow(dead_code))]
pub async fn copy_buffered(
    src: &mut ReadHalf<'_>,
    dst: &mut WriteHalf<'_>,
    activity: &Activity,
    count: &AtomicU64,
) -> io::Result<u64> {
    let mut buf = Vec::with_capacity(64 * 1024);
    let mut total = 0u64;
    loop {
        let n = read_some(src, &mut buf).await?;
        if n == 0 {
            return Ok(total);
        }
        activity.touch();
        dst.write_all(&buf).await?;
        total += n as u64;
        count.fetch_add(n as u64, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    async fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (b, _) = l.accept().await.unwrap();
        (a, b)
    }

    /// The portable path (used where splice(2) is missing) moves bytes exactly.
    #[tokio::test]
    async fn buffered_copy_is_exact() {
        let (mut client, mut src) = pair().await;
        let (mut dst, mut sink) = pair().await;
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let sent = data.clone();
        let writer = tokio::spawn(async move {
            client.write_all(&sent).await.unwrap();
            client.shutdown().await.unwrap();
        });
        let activity = Activity::new();
        let moved = AtomicU64::new(0);
        let (mut src_r, _) = src.split();
        let (_, mut dst_w) = dst.split();
        let copy = copy_buffered(&mut src_r, &mut dst_w, &activity, &moved);
        let mut got = Vec::new();
        let (n, _) = tokio::join!(copy, async {
            // Stop once everything arrived (dst is not shut down by copy itself).
            while got.len() < data.len() {
                let mut buf = [0u8; 65536];
                let n = sink.read(&mut buf).await.unwrap();
                got.extend_from_slice(&buf[..n]);
            }
        });
        writer.await.unwrap();
        assert_eq!(n.unwrap(), data.len() as u64);
        assert!(got == data);
    }
}
