//! HTTP/2 client side: one upstream connection shared by many requests' streams.
//!
//! [`Shared`] is the connection as the endpoint's idle store keeps it (`upstream/idle.rs`)
//! while it has room for streams; [`Stream`] is one request's hold on it, taken by
//! [`Shared::claim`] and given back when dropped. `h2` does the framing, HPACK and flow
//! control; its connection future runs in a task of its own (spawned at [`handshake`]),
//! since it must keep reading while no request is polling (PINGs, SETTINGS, other
//! streams' frames).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::client::SendRequest;
use tokio::io::{AsyncRead, AsyncWrite};
use tracing::debug;

use crate::clock;
use crate::metrics::{Held, GLOBAL};

/// Per stream receive window: what one response may have in flight to weir before the
/// client it goes to takes it.
const STREAM_WINDOW: u32 = 256 * 1024;
/// The connection's receive window, shared by its streams.
const CONNECTION_WINDOW: u32 = 1024 * 1024;

/// One HTTP/2 connection to an endpoint.
pub struct Shared {
    send: SendRequest<Bytes>,
    /// Streams claimed and not yet given back.
    active: AtomicU32,
    /// weir's own bound on `active` (the pool's `max_streams_per_conn`); the endpoint's
    /// SETTINGS_MAX_CONCURRENT_STREAMS may lower it.
    max: u32,
    /// Set when the connection ended (its task's future returned) or refused a new
    /// stream (GOAWAY): no stream is claimed on it again.
    dead: Arc<AtomicBool>,
    pub born: Instant,
    /// Streams opened on it, for `max_requests_per_conn`.
    uses: AtomicU32,
    /// The `UpstreamTls::id` it was opened with (0: cleartext).
    pub tls: u64,
    /// How long it may stay without streams, and since when it has (clock ms; 0 = busy).
    idle_timeout: Duration,
    idle_since_ms: AtomicU64,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("active", &self.active.load(Relaxed))
            .field("dead", &self.is_dead())
            .finish()
    }
}

/// One request's stream on a [`Shared`] connection (its hold on one of the streams).
pub struct Stream {
    pub conn: Arc<Shared>,
    pub(super) send: SendRequest<Bytes>,
}

impl Drop for Stream {
    fn drop(&mut self) {
        if self.conn.active.fetch_sub(1, Relaxed) == 1 {
            self.conn
                .idle_since_ms
                .store(clock::now_ms().max(1), Relaxed);
        }
    }
}

/// Starts HTTP/2 on `io` (its preface and SETTINGS go out with the first request) and
/// claims the first stream. `max` is the pool's `max_streams_per_conn`.
pub async fn handshake<T>(
    io: T,
    max: u32,
    tls: u64,
    idle_timeout: Duration,
) -> Result<Stream, h2::Error>
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (send, conn) = h2::client::Builder::new()
        .enable_push(false)
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .handshake::<_, Bytes>(io)
        .await?;
    let dead = Arc::new(AtomicBool::new(false));
    let ended = dead.clone();
    // Counted as an open upstream connection while its task runs.
    let open = Held::new(&GLOBAL.upstream_open);
    tokio::spawn(async move {
        let _open = open;
        if let Err(e) = conn.await {
            debug!("upstream HTTP/2 connection ended: {e}");
        }
        ended.store(true, Relaxed);
    });
    let shared = Arc::new(Shared {
        send: send.clone(),
        active: AtomicU32::new(1),
        max: max.max(1),
        dead,
        born: Instant::now(),
        uses: AtomicU32::new(1),
        tls,
        idle_timeout,
        idle_since_ms: AtomicU64::new(0),
    });
    Ok(Stream { conn: shared, send })
}

impl Shared {
    /// A stream on this connection, if it is alive and has room for one more.
    pub fn claim(self: &Arc<Self>) -> Option<Stream> {
        if self.is_dead() {
            return None;
        }
        // The endpoint's own limit, from its SETTINGS (h2 queues streams beyond it; weir
        // would rather open another connection than wait).
        let max = self.max.min(self.send.current_max_send_streams() as u32);
        self.active
            .fetch_update(Relaxed, Relaxed, |n| (n < max).then_some(n + 1))
            .ok()?;
        self.uses.fetch_add(1, Relaxed);
        self.idle_since_ms.store(0, Relaxed);
        Some(Stream {
            conn: self.clone(),
            send: self.send.clone(),
        })
    }

    pub fn is_dead(&self) -> bool {
        self.dead.load(Relaxed)
    }

    /// No stream is claimed on it again (it refused one: GOAWAY, or it broke).
    pub fn retire(&self) {
        self.dead.store(true, Relaxed);
    }

    /// Streams opened on it so far.
    pub fn uses(&self) -> u32 {
        self.uses.load(Relaxed)
    }

    /// Whether no stream is open on it.
    pub fn is_idle(&self) -> bool {
        self.active.load(Relaxed) == 0
    }

    /// Whether it has had no stream for longer than its idle timeout at `now_ms`.
    pub fn idle_expired(&self, now_ms: u64) -> bool {
        let since = self.idle_since_ms.load(Relaxed);
        self.active.load(Relaxed) == 0
            && since != 0
            && now_ms.saturating_sub(since) >= self.idle_timeout.as_millis() as u64
    }
}
