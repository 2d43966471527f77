//! The relay for a tcp session whose client side weir terminated (a tcp listener with
//! `[tls]`): plaintext between the TLS session and a plain upstream socket. splice(2)
//! cannot move bytes that must be decrypted, so this copies, with the contract of
//! `relay.rs`: both directions at once, EOF on one side half-closes the other (towards the
//! client: close_notify, then FIN), one idle timer on shared activity, bytes counted as
//! they move, no buffer held while a read waits.
//!
//! Minimal on purpose: a generic copying relay for TLS on either side (`tcp/copy.rs`) is
//! being added separately; this one can give way to it.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Sleep;

use crate::transport::tls::TlsConn;

/// Bytes per read, as `relay.rs`'s small buffer (a TLS record's plaintext is at most 16 KiB).
const BUF: usize = 16 * 1024;

/// Milliseconds from `base` to the last byte moved.
struct Activity {
    base: Instant,
    last: AtomicU64,
}

impl Activity {
    fn touch(&self) {
        self.last
            .store(self.base.elapsed().as_millis() as u64, Relaxed);
    }

    fn idle_deadline(&self, idle: Duration) -> Instant {
        self.base + Duration::from_millis(self.last.load(Relaxed)) + idle
    }
}

/// Relays until both directions end, an error, or `idle` without a byte; `sent` counts
/// client → upstream bytes, `received` the others. `timer` becomes the idle timer.
pub async fn relay(
    client: TlsConn,
    upstream: TcpStream,
    idle: Duration,
    sent: &AtomicU64,
    received: &AtomicU64,
    mut timer: Pin<&mut Sleep>,
) -> io::Result<()> {
    let activity = Activity {
        base: Instant::now(),
        last: AtomicU64::new(0),
    };
    let (client_r, client_w) = client.into_split();
    let (upstream_r, upstream_w) = upstream.into_split();
    let both = async {
        tokio::try_join!(
            one_way(client_r, upstream_w, &activity, sent),
            one_way(upstream_r, client_w, &activity, received)
        )
    };
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

async fn one_way<R, W>(
    mut src: R,
    mut dst: W,
    activity: &Activity,
    count: &AtomicU64,
) -> io::Result<u64>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = Vec::new();
    let mut total = 0u64;
    loop {
        let n = match read_releasing(&mut src, &mut buf).await {
            Ok(n) => n,
            // A TLS client that closes its socket without close_notify: for a byte
            // stream relayed as it is, that is its EOF (the upstream protocol frames
            // its own messages).
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => 0,
            Err(e) => return Err(e),
        };
        if n == 0 {
            // Pass the EOF on (TLS: close_notify, then FIN); the other direction may
            // still be sending.
            let _ = dst.shutdown().await;
            return Ok(total);
        }
        activity.touch();
        dst.write_all(&buf).await?;
        // A TLS writer may keep a record until flushed.
        dst.flush().await?;
        total += n as u64;
        count.fetch_add(n as u64, Relaxed);
    }
}

/// Reads into `buf` (given `BUF` bytes of room), replacing what it held; while the read
/// waits, the buffer goes back to the allocator, so an idle session holds none.
async fn read_releasing<R: AsyncRead + Unpin>(src: &mut R, buf: &mut Vec<u8>) -> io::Result<usize> {
    std::future::poll_fn(|cx| {
        buf.clear();
        if buf.capacity() < BUF {
            buf.reserve_exact(BUF);
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
