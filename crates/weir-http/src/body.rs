//! The response body weir sends to clients: either the upstream's body,
//! streamed frame by frame, or a small body weir generated (errors), or
//! either encoded by the compress filter (`encoded.rs`).
//!
//! When the upstream body ends, its connection goes back to the endpoint's
//! idle pool; when it is dropped early (client gone), the connection closes,
//! since an unread response would poison it.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};

use crate::conn_state::BusyGuard;
use crate::encoded::{Encoded, Encoder, Levels};
use crate::recorder::Recorder;
use weir_config::filter::Encoding;
use weir_metrics::reason::Reason;
use weir_upstream::capacity::Slot;
use weir_upstream::endpoint::EndpointRt;
use weir_upstream::error::ExchangeError;
use weir_upstream::health::{record_success, Loss};
use weir_upstream::idle::PooledSession;
use weir_upstream::pool::PoolRt;
use weir_upstream::{Upgraded, UpstreamResponseBody};

/// The upstream response body, whatever the protocol: it owns the session
/// until the end.
pub type Incoming = UpstreamResponseBody;

/// Where the connection goes once the response is read (the connection
/// itself is inside the response body until then).
pub struct PoolReturn {
    /// The pool the endpoint answered for: a body cut short counts toward
    /// its passive ejection.
    pub pool: Arc<PoolRt>,
    pub endpoint: Arc<EndpointRt>,
    /// When the connection was opened, and requests sent on it so far.
    pub born: Instant,
    pub uses: u32,
    /// How long it may idle in the pool.
    pub idle: Duration,
    /// The pool's `max_conn_age` and `max_requests_per_conn` (0 = none).
    pub max_age: Option<Duration>,
    pub max_uses: u32,
    /// The status was not one of the pool's `eject_status`: a clean end
    /// counts as a success.
    pub success: bool,
}

/// A response body, boxed, so that a response is a pointer wherever it goes. The upstream
/// kind owns the connection's state, the pool return, the slot and the recorder (~410 bytes):
/// inline, every move of a response through the pipeline and the HTTP/2 server's frame pump
/// copied it (memcpy per gRPC call 19.5 KB, per HTTP/1 request 15.9 KB; boxed 7.4 and 7.1 KB,
/// and 6.6 % and 4 % fewer instructions with the one allocation; CPU time the same within
/// the bench's noise, docs/BENCHMARKS.md, "What the build rests on").
pub struct ProxyBody(pub(super) Box<Kind>);

// Always boxed (`ProxyBody`): the kinds' sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub(super) enum Kind {
    Upstream {
        inner: Incoming,
        ret: Option<PoolReturn>,
        ended: bool,
        _busy: Option<BusyGuard>,
        /// The endpoint slot, freed when the response is done (or dropped).
        slot: Option<Slot>,
        _rec: Option<Recorder>,
        /// Response bytes sent, added to the endpoint's count at the end.
        sent: u64,
    },
    Full {
        data: Option<Bytes>,
        _busy: Option<BusyGuard>,
        _rec: Option<Recorder>,
    },
    /// Either of the above, encoded as it streams (the compress filter).
    Encoded(Box<Encoded<ProxyBody>>),
}

impl ProxyBody {
    pub fn full(data: Bytes) -> Self {
        ProxyBody(Box::new(Kind::Full {
            data: (!data.is_empty()).then_some(data),
            _busy: None,
            _rec: None,
        }))
    }

    pub fn upstream(inner: Incoming, ret: Option<PoolReturn>) -> Self {
        ProxyBody(Box::new(Kind::Upstream {
            inner,
            ret,
            ended: false,
            _busy: None,
            slot: None,
            _rec: None,
            sent: 0,
        }))
    }

    /// Whether weir made this answer itself (an error, a redirect), not an upstream.
    pub fn is_generated(&self) -> bool {
        matches!(*self.0, Kind::Full { .. })
    }

    /// Counts and times the request when the response is done.
    pub fn set_recorder(&mut self, rec: Recorder) {
        match &mut *self.0 {
            Kind::Upstream { _rec, .. } | Kind::Full { _rec, .. } => *_rec = Some(rec),
            Kind::Encoded(e) => e.rec = Some(rec),
        }
    }

    /// Holds the request's endpoint slot until the response is fully sent.
    pub fn set_slot(&mut self, slot: Slot) {
        match &mut *self.0 {
            Kind::Upstream { slot: s, .. } => *s = Some(slot),
            Kind::Encoded(e) => e.inner_mut().set_slot(slot),
            Kind::Full { .. } => {}
        }
    }

    /// Ties the client connection's busy state to this body: the connection
    /// counts as idle again only once the response is fully sent.
    pub fn set_busy(&mut self, guard: BusyGuard) {
        match &mut *self.0 {
            Kind::Upstream { _busy, .. } | Kind::Full { _busy, .. } => *_busy = Some(guard),
            Kind::Encoded(e) => e.busy = Some(guard),
        }
    }
}

/// What a relay of a switched connection needs from the 101's body.
pub struct UpgradeParts {
    pub upgraded: Upgraded,
    pub pool: Arc<PoolRt>,
    pub endpoint: Arc<EndpointRt>,
}

impl ProxyBody {
    /// Whether this is a `101`'s body holding a switched upstream connection.
    pub fn is_upgraded(&self) -> bool {
        matches!(&*self.0, Kind::Upstream { inner, ret: Some(_), .. } if inner.is_upgraded())
    }

    /// The switched upstream connection and where it goes. The body keeps
    /// the slot, the busy guard and the recorder until it is dropped, at
    /// the relay's end.
    pub fn take_upgrade(&mut self) -> Option<UpgradeParts> {
        let Kind::Upstream { inner, ret, .. } = &mut *self.0 else {
            return None;
        };
        let upgraded = inner.take_upgraded()?;
        let r = ret.take()?;
        // The backend answered as asked: a success for passive health.
        if r.success {
            record_success(&r.endpoint);
        }
        Some(UpgradeParts {
            upgraded,
            pool: r.pool,
            endpoint: r.endpoint,
        })
    }

    /// The relay is over: `to_client` bytes went to the client (counted for
    /// the endpoint and logged when the body is dropped next).
    pub fn upgrade_ended(&mut self, to_client: u64) {
        if let Kind::Upstream { sent, ended, .. } = &mut *self.0 {
            *sent = to_client;
            *ended = true;
        }
    }
}

impl Body for ProxyBody {
    type Data = Bytes;
    type Error = ExchangeError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, ExchangeError>>> {
        match &mut *self.get_mut().0 {
            Kind::Full { data, .. } => Poll::Ready(data.take().map(|d| Ok(Frame::data(d)))),
            Kind::Encoded(e) => Pin::new(&mut **e).poll_frame(cx),
            Kind::Upstream {
                inner,
                ret,
                ended,
                sent,
                slot,
                _rec,
                ..
            } => {
                let r = Pin::new(&mut *inner).poll_frame(cx);
                match &r {
                    Poll::Ready(None) => {
                        *ended = true;
                        // The request's end, for pooling and its recorder.
                        let now = Instant::now();
                        if let Some(r) = _rec {
                            r.end = Some(now);
                        }
                        give_back(ret, inner, now);
                        // The backend is done with this request: its slot is
                        // free now, not only once the client has the last byte.
                        release(slot, *sent);
                    }
                    Poll::Ready(Some(Ok(f))) => match f.data_ref() {
                        Some(d) => *sent += d.len() as u64,
                        // A gRPC call's status comes in its trailers.
                        None => {
                            if let (Some(r), Some(t)) = (_rec.as_mut(), f.trailers_ref()) {
                                r.grpc_status(t);
                            }
                        }
                    },
                    Poll::Ready(Some(Err(_))) => cut_short(ret, _rec),
                    Poll::Pending => {}
                }
                r
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &*self.0 {
            Kind::Full { data, .. } => data.is_none(),
            Kind::Upstream { inner, ended, .. } => *ended || inner.is_end_stream(),
            Kind::Encoded(e) => e.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &*self.0 {
            Kind::Full { data, .. } => {
                SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64))
            }
            Kind::Upstream { inner, .. } => inner.size_hint(),
            Kind::Encoded(e) => e.size_hint(),
        }
    }
}

impl Drop for ProxyBody {
    fn drop(&mut self) {
        if let Kind::Upstream {
            inner,
            ret,
            ended,
            slot,
            sent,
            _rec,
            ..
        } = &mut *self.0
        {
            release(slot, *sent);
            // At most one clock read, shared by the recorder and the pooling.
            let end = _rec.as_ref().and_then(|r| r.end);
            let now = end.unwrap_or_else(Instant::now);
            if let Some(r) = _rec {
                r.bytes = *sent;
                r.end = Some(now);
            }
            // Bodies never polled (HEAD, 204, Content-Length: 0) are
            // complete too; anything else unread means the connection is dirty.
            if *ended || inner.is_end_stream() {
                give_back(ret, inner, now);
            }
        }
    }
}

/// The backend ended the response before its end (a reset, a close, bytes
/// that break the framing): the client sees the cut, so the request is not a
/// success in the counts, the access log or passive ejection.
#[cold]
fn cut_short(ret: &mut Option<PoolReturn>, rec: &mut Option<Recorder>) {
    let reason = Reason::UpstreamReset;
    if let Some(r) = rec {
        r.reason.get_or_insert(reason);
    }
    if let Some(r) = ret.take() {
        r.endpoint.metrics.error(reason);
        r.pool
            .record_failure(&r.endpoint, reason.as_str(), Loss::InFlight);
    }
}

/// Frees the request's slot (waking the first queued request) and counts
/// the response bytes sent for its endpoint.
fn release(slot: &mut Option<Slot>, sent: u64) {
    if let Some(s) = slot.take() {
        s.endpoint
            .metrics
            .bytes_out
            .fetch_add(sent, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The response ended cleanly: a success for passive ejection (only now,
/// not at its head, so that a body cut short counts as the failure it is),
/// and the connection pooled if the exchange left it reusable (the body
/// reports that) and it is not too old, worn out, or its endpoint draining.
fn give_back(ret: &mut Option<PoolReturn>, body: &mut Incoming, now: Instant) {
    let Some(r) = ret.take() else { return };
    if r.success {
        record_success(&r.endpoint);
    }
    let Some(session) = body.take_reusable() else {
        return;
    };
    let too_old = r
        .max_age
        .is_some_and(|m| now.saturating_duration_since(r.born) >= m);
    let worn = r.max_uses > 0 && r.uses >= r.max_uses;
    if !r.endpoint.is_draining() && !too_old && !worn {
        let conn = PooledSession {
            session,
            born: r.born,
            uses: r.uses,
            tls: r.pool.tls.as_ref().map_or(0, |t| t.id),
        };
        r.endpoint.idle.checkin(conn, r.idle, now);
    }
}

impl ProxyBody {
    /// Encodes this body with `e` from now on. Fails only if the encoder cannot be made
    /// (zstd refusing its parameters); the body is then left as it was.
    pub fn encode(&mut self, e: Encoding, levels: Levels, size: Option<u64>) -> io::Result<()> {
        let enc = Encoder::new(e, levels, size)?;
        let mut inner = std::mem::replace(self, ProxyBody::full(Bytes::new()));
        // The recorder and the busy guard belong to what the client gets.
        let (busy, rec) = match &mut *inner.0 {
            Kind::Upstream { _busy, _rec, .. } | Kind::Full { _busy, _rec, .. } => {
                (_busy.take(), _rec.take())
            }
            Kind::Encoded(e) => (e.busy.take(), e.rec.take()),
        };
        *self.0 = Kind::Encoded(Box::new(Encoded::new(inner, enc, busy, rec)));
        Ok(())
    }
}
