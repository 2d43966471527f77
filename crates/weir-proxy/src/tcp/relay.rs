//! Relaying bytes both ways. Each direction ends on EOF by half-closing the
//! other side (so protocols that shut down writing, then read, still work);
//! the session ends when both directions are done, on an error, or when no
//! byte moved either way for `idle_timeout`.

use std::io;
use std::net::Shutdown;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use tokio::net::TcpStream;

/// Milliseconds since the session began at the last byte moved.
pub struct Activity {
    base: Instant,
    last: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Activity {
            base: Instant::now(),
            last: AtomicU64::new(0),
        }
    }

    #[inline]
    pub fn touch(&self) {
        self.last
            .store(self.base.elapsed().as_millis() as u64, Relaxed);
    }

    fn idle_deadline(&self, idle: Duration) -> Instant {
        self.base + Duration::from_millis(self.last.load(Relaxed)) + idle
    }
}

/// Relays until done; bytes moved are added to `sent` (client → upstream)
/// and `received` (upstream → client) as they move.
pub async fn relay(
    client: TcpStream,
    upstream: TcpStream,
    idle: Duration,
    sent: &AtomicU64,
    received: &AtomicU64,
) -> io::Result<()> {
    let activity = Activity::new();
    let both = async {
        tokio::try_join!(
            one_way(&client, &upstream, &activity, sent),
            one_way(&upstream, &client, &activity, received)
        )
    };
    tokio::pin!(both);
    loop {
        let deadline = activity.idle_deadline(idle);
        tokio::select! {
            r = both.as_mut() => return r.map(|_| ()),
            _ = tokio::time::sleep_until(deadline.into()) => {
                if Instant::now() >= activity.idle_deadline(idle) {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "idle timeout"));
                }
            }
        }
    }
}

async fn one_way(
    src: &TcpStream,
    dst: &TcpStream,
    activity: &Activity,
    count: &AtomicU64,
) -> io::Result<u64> {
    // Short exchanges go through a small buffer: a splice pipe costs six
    // system calls to create and close, more than a few reads and writes.
    // Once a read fills the buffer the stream is bulk, and splice takes over.
    #[cfg(target_os = "linux")]
    let n = match copy_small(src, dst, activity, count).await? {
        Copied::Done(n) => n,
        Copied::Bulk(n) => n + crate::tcp::splice::copy(src, dst, activity, count).await?,
    };
    #[cfg(not(target_os = "linux"))]
    let n = copy_buffered(src, dst, activity, count).await?;
    // Pass the EOF on; the other direction may still be sending.
    let _ = socket2::SockRef::from(dst).shutdown(Shutdown::Write);
    Ok(n)
}

/// What `copy_small` did: reached EOF, or met a bulk stream.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
enum Copied {
    Done(u64),
    Bulk(u64),
}

/// Bytes per read before a stream counts as bulk.
const SMALL: usize = 16 * 1024;

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
async fn copy_small(
    src: &TcpStream,
    dst: &TcpStream,
    activity: &Activity,
    count: &AtomicU64,
) -> io::Result<Copied> {
    // Not zeroed: reads go into spare capacity. Zeroing 16 KiB per direction
    // was more than half of a short session's instructions.
    let mut buf = Vec::with_capacity(SMALL);
    let mut total = 0u64;
    loop {
        let n = read_some(src, &mut buf).await?;
        if n == 0 {
            return Ok(Copied::Done(total));
        }
        activity.touch();
        write_all(dst, &buf[..n]).await?;
        total += n as u64;
        count.fetch_add(n as u64, Relaxed);
        if n >= SMALL {
            return Ok(Copied::Bulk(total));
        }
    }
}

/// Reads into `buf`'s capacity, replacing what it held.
async fn read_some(src: &TcpStream, buf: &mut Vec<u8>) -> io::Result<usize> {
    loop {
        src.readable().await?;
        buf.clear();
        match src.try_read_buf(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
}

async fn write_all(dst: &TcpStream, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        dst.writable().await?;
        match dst.try_write(data) {
            Ok(m) => data = &data[m..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The portable path: read into a buffer, write it out.
#[cfg_attr(target_os = "linux", allow(dead_code))]
pub async fn copy_buffered(
    src: &TcpStream,
    dst: &TcpStream,
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
        write_all(dst, &buf[..n]).await?;
        total += n as u64;
        count.fetch_add(n as u64, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
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
        let (mut client, src) = pair().await;
        let (dst, mut sink) = pair().await;
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let sent = data.clone();
        let writer = tokio::spawn(async move {
            client.write_all(&sent).await.unwrap();
            client.shutdown().await.unwrap();
        });
        let activity = Activity::new();
        let moved = AtomicU64::new(0);
        let copy = copy_buffered(&src, &dst, &activity, &moved);
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
