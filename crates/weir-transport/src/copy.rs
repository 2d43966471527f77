//! Relaying through streams splice(2) cannot move: a TLS session on either side (a pool
//! with `tls`, a listener that terminates TLS). The same contract as `relay.rs`: both
//! directions at once, EOF on one side half-closes the other (through TLS: close_notify,
//! then FIN), the shared idle timer, and bytes counted as they move; plain socket pairs
//! keep `relay.rs` and its splice.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::time::Sleep;

use crate::activity::Activity;
use crate::relay::{read_releasing, until_idle};

/// Relays between `client` and `upstream` until both directions end, an error, or `idle`
/// without a byte; `sent` counts client → upstream bytes, `received` the others. `timer`
/// becomes the idle timer, as in `relay::relay`.
pub async fn relay<C, U>(
    client: C,
    upstream: U,
    idle: Duration,
    sent: &AtomicU64,
    received: &AtomicU64,
    timer: Pin<&mut Sleep>,
) -> io::Result<()>
where
    C: AsyncRead + AsyncWrite + Unpin,
    U: AsyncRead + AsyncWrite + Unpin,
{
    let activity = Activity::new();
    // Both halves of each stream are polled from this one task, so the split's lock is
    // never contended.
    let (client_r, client_w) = tokio::io::split(client);
    let (upstream_r, upstream_w) = tokio::io::split(upstream);
    let both = async {
        tokio::try_join!(
            one_way(client_r, upstream_w, &activity, sent),
            one_way(upstream_r, client_w, &activity, received)
        )
    };
    until_idle(both, &activity, idle, timer).await
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
    // Given back while a read waits, as in `relay.rs`: an idle session holds no buffer.
    let mut buf = Vec::new();
    let mut total = 0u64;
    loop {
        let n = read_releasing(&mut src, &mut buf).await?;
        if n == 0 {
            // Pass the EOF on; the other direction may still be sending.
            let _ = dst.shutdown().await;
            return Ok(total);
        }
        activity.touch();
        dst.write_all(&buf).await?;
        // A TLS writer may hold records back until flushed.
        dst.flush().await?;
        total += n as u64;
        count.fetch_add(n as u64, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// Byte-exact both ways with half-close, over in-memory streams (what a TLS stream
    /// looks like to it: any AsyncRead + AsyncWrite).
    #[tokio::test]
    async fn relays_both_ways_and_passes_eof_on() {
        let (client, mut client_peer) = tokio::io::duplex(4096);
        let (upstream, mut upstream_peer) = tokio::io::duplex(4096);
        let (sent, received) = (AtomicU64::new(0), AtomicU64::new(0));
        let timer = tokio::time::sleep(Duration::from_secs(30));
        tokio::pin!(timer);
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let want = data.clone();
        let peers = async move {
            let up = async {
                let mut got = Vec::new();
                upstream_peer.read_to_end(&mut got).await.unwrap();
                assert!(got == want, "upstream got {} bytes", got.len());
                upstream_peer.write_all(b"bye").await.unwrap();
                upstream_peer.shutdown().await.unwrap();
            };
            let cl = async {
                client_peer.write_all(&data).await.unwrap();
                client_peer.shutdown().await.unwrap();
                let mut back = Vec::new();
                client_peer.read_to_end(&mut back).await.unwrap();
                assert_eq!(back, b"bye");
            };
            tokio::join!(up, cl);
        };
        let (r, ()) = tokio::join!(
            relay(
                client,
                upstream,
                Duration::from_secs(30),
                &sent,
                &received,
                timer.as_mut()
            ),
            peers
        );
        r.unwrap();
        assert_eq!(sent.load(Relaxed), 200_000);
        assert_eq!(received.load(Relaxed), 3);
    }

    #[tokio::test]
    async fn a_silent_session_idles_out() {
        let (client, _client_peer) = tokio::io::duplex(64);
        let (upstream, _upstream_peer) = tokio::io::duplex(64);
        let (sent, received) = (AtomicU64::new(0), AtomicU64::new(0));
        let timer = tokio::time::sleep(Duration::from_millis(50));
        tokio::pin!(timer);
        let r = relay(
            client,
            upstream,
            Duration::from_millis(50),
            &sent,
            &received,
            timer,
        )
        .await;
        assert_eq!(r.unwrap_err().kind(), io::ErrorKind::TimedOut);
    }
}
