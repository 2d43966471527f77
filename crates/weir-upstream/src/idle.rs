//! The idle keep-alive sessions of one endpoint, whatever their protocol, in
//! the two ways a protocol reuses them (`SessionKind::reuse`): pooled sessions
//! (HTTP/1.1-like: one per connection, checked out whole, one request at a
//! time) and multiplexed connections (HTTP/2-like: a [`Carrier`] kept while it
//! has room, each request claiming a session on it).
//!
//! Why by hand rather than hyper-util's pool: weir must decide each
//! connection's expiry itself (the pool's idle timeout, lowered by the
//! backend's `Keep-Alive: timeout=` and by what it learns from backends that
//! close idle connections silently), cap connection age and requests per
//! connection, and drop everything when an endpoint drains.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::carrier::Carrier;
use crate::session::Session;
use weir_metrics::clock;

/// Upper bound on idle connections kept per endpoint; beyond it the oldest close.
const MAX_IDLE: usize = 1024;
/// A learned idle-close time is trusted this long without new evidence.
const LEARNED_TTL_MS: u64 = 60_000;
/// An idle connection gives back its read buffer after this long unused (at the next
/// sweep, which runs every second).
const RELEASE_AFTER: Duration = Duration::from_secs(1);
/// The shortest idle-close time weir will learn.
const MIN_LEARNED_MS: u64 = 10;
/// Connections retire at 3/4 of a learned idle-close time, and at least this long before
/// it: what lies between the backend's clock and the kernel's here (a round trip, a tick
/// of each kernel's clock, the backend's own timer) does not shrink with the timeout.
const LEARNED_MARGIN: Duration = Duration::from_millis(10);

/// An upstream session and its life so far, as the idle store pools it and a try checks it out.
pub struct PooledSession {
    pub session: Session,
    pub born: Instant,
    /// Requests sent on it, the current one included.
    pub uses: u32,
    /// The `UpstreamTls::id` it was opened with (0: plain): a pool whose tls
    /// table changed reuses none of the connections made before.
    pub tls: u64,
}

struct Idle {
    conn: PooledSession,
    since: Instant,
    /// How long it may stay idle: from `since` by weir's clock, and, once the endpoint
    /// is known to close idle connections, from its answer's last bytes by the kernel's.
    allow: Duration,
}

#[derive(Default)]
pub struct IdleConns {
    /// Oldest first; checkout takes the newest (LIFO keeps few connections warm
    /// and lets the rest expire).
    conns: Mutex<Vec<Idle>>,
    /// Multiplexed connections, busy or not: each carries many sessions at once, so it
    /// stays here while in use and [`IdleConns::claim`] hands out sessions on it. Oldest
    /// first.
    carriers: Mutex<Vec<Carrier>>,
    /// Shortest idle time after which this backend was seen closing a pooled
    /// connection (ms, 0 = never seen), and when that was last confirmed.
    learned_ms: AtomicU64,
    learned_at: AtomicU64,
    /// A close seen but not yet believed (ms, 0 = none): see `learn`.
    candidate_ms: AtomicU64,
}

impl std::fmt::Debug for IdleConns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdleConns")
            .field("len", &self.len())
            .finish()
    }
}

/// A pooled connection handed out, with how long it had been idle.
pub struct Checkout {
    pub conn: PooledSession,
    pub idle_for: Duration,
}

impl IdleConns {
    /// A pooled connection that is open, ready, not expired, and made with
    /// the pool's TLS settings `tls` (see [`PooledSession::tls`]).
    ///
    /// On an endpoint known to close idle connections (a learned idle close),
    /// the kernel decides, with one `TCP_INFO` per candidate: whether the
    /// backend's FIN is in, and how long since its last answer arrived. Weir's
    /// own view lags on a busy machine: the reactor reports a FIN only once a
    /// thread polls it, and a connection's idle time counts from when its task
    /// got round to pooling it, which can be tens of milliseconds after the
    /// answer came and the backend's idle clock started.
    pub fn checkout(&self, now: Instant, tls: u64) -> Option<Checkout> {
        let learned = self.learned();
        // The lock is not held while a connection is checked.
        loop {
            let c = self.conns.lock().unwrap().pop()?;
            // Learned since it was pooled, perhaps.
            let allow = learned.map_or(c.allow, |l| c.allow.min(l));
            let pooled_for = now.saturating_duration_since(c.since);
            let mut idle_for = pooled_for;
            // A FIN (or RST) from the backend shows as a readable socket:
            // such a connection is dropped, and its age teaches the idle
            // timeout. The check is a system call only when the socket was
            // reported readable.
            let mut closed = c.conn.session.is_closed();
            let mut expired = idle_for >= allow;
            if learned.is_some() && !closed && !expired && c.conn.tls == tls {
                if let Some(k) = c.conn.session.tcp_state() {
                    closed = !k.open;
                    idle_for = idle_for.max(k.since_data_in);
                    // The request still has half a round trip to go, and the backend's
                    // idle clock started half a round trip before the answer arrived.
                    expired = idle_for + k.rtt >= allow;
                }
            }
            if !closed && !expired && c.conn.tls == tls {
                return Some(Checkout {
                    idle_for,
                    conn: c.conn,
                });
            }
            tracing::debug!(
                closed,
                expired,
                tls_changed = c.conn.tls != tls,
                ?idle_for,
                "pooled upstream connection not reused"
            );
            if closed {
                self.learn(c.conn.session.closed_after(pooled_for).unwrap_or(idle_for));
            }
        }
    }

    /// A new connection to an endpoint known to close idle connections, before its first
    /// request: whether the backend may have closed it already (its FIN is in), or be
    /// about to: it has been open, by the kernel's clock, as long as a pooled connection
    /// may idle here. Weir's task may have waited for a core since the handshake, while
    /// the backend's idle clock ran from its accept. One `TCP_INFO`, next to a connect.
    /// When so, how long it has sat since the handshake, by the kernel's clock.
    pub fn closed_unused(&self, session: &Session) -> Option<Duration> {
        let allow = self.learned()?;
        let k = session.tcp_state()?;
        // A backend closing connections idle for 10 ms or so leaves no room: the age
        // of a new one is then no reason to open another.
        (!k.open || (!allow.is_zero() && k.since_data_in + k.rtt >= allow))
            .then_some(k.since_data_in)
    }

    /// A session on a multiplexed connection (an HTTP/2 stream) made with the pool's TLS
    /// settings `tls` that has room for one, the newest first (as `checkout`: traffic
    /// gathers on few connections and the rest idle out). Connections that ended, are
    /// older than `max_age` or carried `max_uses` sessions are let go: their sessions run
    /// on, and each closes with its last.
    pub fn claim(
        &self,
        tls: u64,
        now: Instant,
        max_age: Option<Duration>,
        max_uses: u32,
    ) -> Option<PooledSession> {
        let mut carriers = self.carriers.lock().unwrap();
        let mut i = carriers.len();
        while i > 0 {
            i -= 1;
            let c = &carriers[i];
            let spent = c.is_dead()
                || max_age.is_some_and(|m| now.saturating_duration_since(c.born()) >= m)
                || (max_uses > 0 && c.uses() >= max_uses);
            if spent {
                carriers.remove(i);
                continue;
            }
            if c.tls() != tls {
                continue;
            }
            if let Some(session) = c.claim() {
                return Some(PooledSession {
                    born: c.born(),
                    // The exchange counts this one.
                    uses: c.uses() - 1,
                    tls,
                    session,
                });
            }
        }
        None
    }

    /// Keeps a new multiplexed session's connection for other requests' sessions.
    pub fn share(&self, session: &Session) {
        if let Some(c) = session.carrier() {
            self.carriers.lock().unwrap().push(c);
        }
    }

    /// Returns a connection; `idle` is how long it may now stay idle.
    /// Only connections whose last exchange ended cleanly come here.
    pub fn checkin(&self, conn: PooledSession, idle: Duration, now: Instant) {
        let idle = match self.learned() {
            Some(l) => idle.min(l),
            None => idle,
        };
        let mut conns = self.conns.lock().unwrap();
        if conns.len() >= MAX_IDLE {
            conns.remove(0);
        }
        conns.push(Idle {
            conn,
            since: now,
            allow: idle,
        });
    }

    /// The backend closed a connection that had been idle this long (found
    /// closed in the pool, or failing on reuse; by the kernel's clock where it
    /// can tell, see `H1ClientConnection::closed_after` and `silent_when_sent`: weir's own
    /// count of a connection's idle time starts late, and it may find the close
    /// much later than it came). That is an idle timeout only
    /// if the backend still accepts new connections: a crashing or restarting
    /// backend closes connections of every age, and learning from that would
    /// retire every pooled connection for a minute. So the age is a candidate
    /// until a new connection to the endpoint is answered (`confirm`), and is
    /// forgotten when connecting fails (`discard`).
    pub fn learn(&self, idle_for: Duration) {
        let ms = (idle_for.as_millis() as u64).max(1);
        let _ = self.candidate_ms.fetch_update(Relaxed, Relaxed, |c| {
            Some(if c == 0 { ms } else { c.min(ms) })
        });
    }

    /// A new connection to the endpoint was answered: a pending candidate was
    /// a real idle timeout.
    #[inline]
    pub fn confirm(&self) {
        let ms = self.candidate_ms.swap(0, Relaxed);
        if ms != 0 {
            self.believe(ms);
        }
    }

    /// Connecting to the endpoint failed: its recent closes were an outage.
    pub fn discard(&self) {
        self.candidate_ms.store(0, Relaxed);
    }

    fn believe(&self, ms: u64) {
        // Below this, a learned time would mostly be noise; retries cover
        // any race it leaves.
        let ms = ms.max(MIN_LEARNED_MS);
        let now = clock::now_ms();
        let current = self.learned_ms.load(Relaxed);
        let stale = now.saturating_sub(self.learned_at.load(Relaxed)) > LEARNED_TTL_MS;
        if current == 0 || stale || ms < current {
            self.learned_ms.store(ms, Relaxed);
        }
        self.learned_at.store(now, Relaxed);
    }

    /// How long connections may idle here by what the backend has shown:
    /// 3/4 of the shortest idle close seen recently, and [`LEARNED_MARGIN`]
    /// short of it at least (nothing, for a close seen at 10 ms).
    pub fn learned(&self) -> Option<Duration> {
        let ms = self.learned_ms.load(Relaxed);
        if ms == 0 || clock::now_ms().saturating_sub(self.learned_at.load(Relaxed)) > LEARNED_TTL_MS
        {
            return None;
        }
        Some(allowance(Duration::from_millis(ms)))
    }

    /// Closes the connections past their expiry or closed by the backend, and has those idle
    /// for a sweep's period or more give back their read buffers (one reused sooner is a
    /// busy one, and keeps it: making it again per request would cost an allocation each).
    pub fn prune(&self, now: Instant) {
        let mut conns = self.conns.lock().unwrap();
        conns.retain_mut(|c| {
            let keep =
                now.saturating_duration_since(c.since) < c.allow && !c.conn.session.is_closed();
            if keep && now.saturating_duration_since(c.since) >= RELEASE_AFTER {
                c.conn.session.release_idle();
            }
            keep
        });
        drop(conns);
        let now_ms = clock::now_ms();
        let mut carriers = self.carriers.lock().unwrap();
        carriers.retain(|c| !c.is_dead() && !c.idle_expired(now_ms));
    }

    pub fn clear(&self) {
        // Dropping the connections closes their sockets (a shared one once its last
        // stream ends).
        let drained = std::mem::take(&mut *self.conns.lock().unwrap());
        drop(drained);
        let drained = std::mem::take(&mut *self.carriers.lock().unwrap());
        drop(drained);
    }

    /// Idle connections: pooled ones kept, and multiplexed ones without a session.
    pub fn len(&self) -> usize {
        let carriers = self.carriers.lock().unwrap();
        let multiplexed = carriers.iter().filter(|c| c.is_idle()).count();
        drop(carriers);
        self.conns.lock().unwrap().len() + multiplexed
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// How long a connection may idle on an endpoint seen closing idle connections after
/// `seen`.
fn allowance(seen: Duration) -> Duration {
    (seen * 3 / 4).min(seen.saturating_sub(LEARNED_MARGIN))
}

#[cfg(test)]
mod tests {
    use tokio::net::{TcpListener, TcpStream};

    use super::*;
    use weir_codec::h1::client::H1ClientConnection;
    use weir_transport::UpstreamStream;

    /// Retired at 3/4 of a learned idle close, and 10 ms short of it at least.
    #[test]
    fn the_margin_under_a_learned_idle_close() {
        let ms = Duration::from_millis;
        assert_eq!(allowance(ms(40)), ms(30));
        assert_eq!(allowance(ms(20)), ms(10));
        assert_eq!(allowance(ms(5000)), ms(3750));
        assert_eq!(allowance(ms(10)), Duration::ZERO);
    }

    /// The sweep takes the read buffer of a connection idle a second or more, not of one
    /// idle for less (a busy connection keeps it).
    #[tokio::test]
    async fn the_sweep_takes_the_read_buffers_of_connections_idle_a_second() {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let idle = IdleConns::default();
        let t0 = Instant::now();
        let mut backends = Vec::new();
        for since in [t0, t0 + Duration::from_millis(900)] {
            let (ours, theirs) = tokio::join!(TcpStream::connect(addr), l.accept());
            backends.push(theirs.unwrap().0);
            let mut c = H1ClientConnection::new(UpstreamStream::Plain(ours.unwrap()));
            c.reserve_for_test();
            let conn = PooledSession {
                session: Session::H1(c),
                born: since,
                uses: 1,
                tls: 0,
            };
            idle.checkin(conn, Duration::from_secs(600), since);
        }
        idle.prune(t0 + Duration::from_millis(1500));
        // LIFO: the newer (idle 0.6 s) first, then the older (idle 1.5 s).
        let rooms: Vec<usize> = std::iter::from_fn(|| idle.checkout(t0, 0))
            .map(|c| match c.conn.session {
                Session::H1(c) => c.read_room(),
                _ => unreachable!("HTTP/1.1 sessions were checked in"),
            })
            .collect();
        assert_eq!(rooms.len(), 2);
        assert!(rooms[0] > 0, "{rooms:?}");
        assert_eq!(rooms[1], 0, "{rooms:?}");
    }
}
