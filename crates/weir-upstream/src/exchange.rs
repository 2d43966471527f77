//! One try's upstream exchange: a session checked out of the endpoint's
//! idle store or opened for it, the request sent, the response head back.
//!
//! A pooled session found dead before a byte of the request went out is
//! replaced by a fresh one within the same try: the request never left,
//! so this is no retry. Nor is sending the request again after the backend
//! closed an HTTP/1.1 connection for idleness without reading it: a pooled
//! one (the stale keep-alive race), or a new one left idle while weir waited
//! for a core. On an endpoint known to close idle connections, a new one
//! whose backend closed it (or may be about to) before its request went out
//! is replaced too. A few of these at most per try. Everything else comes
//! back as the [`TryError`] the tries decide from.

use std::time::{Duration, Instant};

use http::request::Parts;
use http::Response;

use crate::body::UpstreamResponseBody;
use crate::endpoint::EndpointRt;
use crate::error::{Cause, Limit, TryError};
use crate::idle::PooledSession;
use crate::kind::{Dial, Reuse, SessionKind};
use crate::send_failed::SendFailed;
use crate::session::Session;
use crate::upbody::UpBody;
use weir_codec::added::Added;
use weir_codec::h2::keepalive::Ping;
use weir_codec::send::{HeadTimer, Payload};
use weir_transport::UpstreamTls;

/// How many new connections one try may open in place of connections the backend closed
/// before reading its request.
const MAX_REPLACED: u8 = 3;
/// ... and in place of new ones it closed as idle, which sat (by the kernel's clock) while
/// weir waited for a core: weir's lateness, not the endpoint's. A host starved for CPU can
/// be late several times in a row for one request; a backend that closes every connection
/// unread does so at once, and spends `MAX_REPLACED`.
const MAX_LATE: u8 = 16;
/// A new connection the backend closed unread after it sat this long (by the kernel's
/// clock) before its request went out was closed as an idle one: the shortest idle close
/// weir learns.
const IDLE_CLOSED_AFTER: Duration = Duration::from_millis(10);

/// What a try asks of the endpoint.
pub struct Exchange<'a> {
    pub endpoint: &'a EndpointRt,
    pub parts: &'a Parts,
    /// Fields written after `parts`' own (`codec::added`).
    pub added: &'a Added<'a>,
    pub connect_timeout: Duration,
    /// The pool's TLS to its endpoints, if it has any.
    pub tls: Option<&'a UpstreamTls>,
    /// What the timer's cap stands for (the pool's `request_timeout` or the request's own
    /// deadline), for the log line when it ran out.
    pub cap_of: Limit,
    /// Open a new session rather than reuse one (a retry).
    pub fresh_only: bool,
    /// A PROXY protocol header to start the new session with (a `send_proxy` pool); the
    /// session is then the request's own: an HTTP/2 connection is not shared.
    pub proxy_header: Option<&'a [u8]>,
    /// What the pool speaks, and its multiplexing (HTTP/2) and reuse settings.
    pub protocol: SessionKind,
    pub max_streams: u32,
    pub idle_timeout: Duration,
    pub ping: Option<&'a Ping>,
    pub max_age: Option<Duration>,
    pub max_uses: u32,
}

/// The response head, and the session's life so far (the body owns it).
pub struct Exchanged {
    pub resp: Response<UpstreamResponseBody>,
    pub born: Instant,
    /// Requests sent on the session, this one included.
    pub uses: u32,
    /// When the request went out on it (after any connect).
    pub sent_at: Instant,
}

/// `connect_took` is set to the time spent opening a session, if one was
/// opened (for the access log, failed or not); `unsent` gets the payload back
/// when the try failed before a byte of it went out (a streamed body can then
/// go to another try, as a replayable one would).
pub async fn exchange(
    x: Exchange<'_>,
    body: Payload<UpBody>,
    timer: HeadTimer,
    connect_took: &mut Duration,
    unsent: &mut Option<Payload<UpBody>>,
) -> Result<Exchanged, TryError> {
    let ep = x.endpoint;
    let started = timer.started;
    let mut body = body;
    let mut fresh_only = x.fresh_only;
    let tls_id = x.tls.map_or(0, |t| t.id);
    // New connections this try may open in place of one whose backend closed it before
    // it carried a byte of the request.
    let mut spare = MAX_REPLACED;
    let mut late = MAX_LATE;
    let pooled_reuse = x.protocol.reuse() == Reuse::Pooled;
    loop {
        // Only the first pass checks out: `started` is still now.
        let (pooled, idle_for) = match (fresh_only, pooled_reuse) {
            (true, _) => (None, None),
            // A claim on a multiplexed connection: it was not idle, there is nothing to
            // learn.
            (false, false) => {
                let c = ep.idle.claim(tls_id, started, x.max_age, x.max_uses);
                (c, None)
            }
            (false, true) => match ep.idle.checkout(started, tls_id) {
                Some(c) => (Some(c.conn), Some(c.idle_for)),
                None => (None, None),
            },
        };
        let reused = pooled.is_some();
        let (mut conn, sent_at) = match pooled {
            Some(c) => (c, started),
            None => {
                let opening = Instant::now();
                let left = timer
                    .cap
                    .map_or(x.connect_timeout, |c| c.saturating_duration_since(opening));
                let timeout = x.connect_timeout.min(left.max(Duration::from_millis(1)));
                let dial = Dial {
                    addr: ep.addr,
                    timeout,
                    tls: x.tls,
                    protocol: x.protocol,
                    max_streams: x.max_streams,
                    idle_timeout: x.idle_timeout,
                    ping: x.ping,
                    proxy_header: x.proxy_header,
                };
                let opened = Session::open(dial).await;
                // Closed by the backend (or about to be) while weir waited for a core
                // after the handshake: the request would only meet its close.
                if let Some(sat) = opened.as_ref().ok().and_then(|s| ep.idle.closed_unused(s)) {
                    let budget = match sat >= IDLE_CLOSED_AFTER {
                        true => &mut late,
                        false => &mut spare,
                    };
                    if *budget > 0 {
                        *budget -= 1;
                        tracing::debug!(
                            ?sat,
                            "new upstream connection idle too long before its request"
                        );
                        fresh_only = true;
                        continue;
                    }
                }
                match opened {
                    Ok(session) => {
                        if x.proxy_header.is_none() {
                            ep.idle.share(&session);
                        }
                        let now = Instant::now();
                        *connect_took = now - opening;
                        (
                            PooledSession {
                                session,
                                born: now,
                                uses: 0,
                                tls: tls_id,
                            },
                            now,
                        )
                    }
                    Err(e) => {
                        ep.idle.discard();
                        *unsent = Some(body);
                        return Err(TryError::connect(e));
                    }
                }
            }
        };
        conn.uses += 1;
        let PooledSession {
            session,
            born,
            uses,
            tls: _,
        } = conn;
        let timer = HeadTimer {
            started: sent_at,
            ..timer
        };
        // A body in memory can go again should the backend turn out to have closed the
        // connection without reading the request (a clone shares the bytes).
        let again = match &body {
            Payload::Bytes(b) if (spare > 0 || late > 0) && pooled_reuse => Some(b.clone()),
            _ => None,
        };
        match session.send(x.parts, x.added, body, timer, reused).await {
            Ok(resp) => {
                if !reused {
                    ep.idle.confirm();
                }
                return Ok(Exchanged {
                    resp,
                    born,
                    uses,
                    sent_at,
                });
            }
            Err(SendFailed {
                mut error,
                unsent: back,
                answered,
                silent_for,
            }) => {
                if let Cause::Timeout { ran_out, .. } = &mut error.cause {
                    if timer.cap.is_some_and(|cap| cap <= Instant::now()) {
                        *ran_out = Some(x.cap_of);
                    }
                    return Err(error);
                }
                if reused && !answered {
                    // Most likely the stale keep-alive race: the backend
                    // closed the idle connection as we wrote. Learn how long
                    // it keeps them, so the next ones are not reused so late:
                    // by the kernel's clock where it can tell (weir's own can
                    // start tens of milliseconds late on a busy machine).
                    if let Some(age) = silent_for.or(idle_for) {
                        ep.idle.learn(age);
                    }
                }
                // The backend closed the connection unread, and as an idle one: a pooled
                // connection (the stale keep-alive race), or a new one that sat idle
                // while weir waited for a core. Weir lost that race, not the endpoint:
                // the request goes on a new connection to it, within this try, as it
                // would have had the close been seen before the write.
                // (Not a request to switch protocols: that goes once, see weir-pipeline's `http/tries.rs`.)
                let idle_closed = error.not_delivered()
                    && !answered
                    && (reused || silent_for.is_some_and(|s| s >= IDLE_CLOSED_AFTER))
                    && !x.parts.headers.contains_key(http::header::UPGRADE);
                // A new connection closed as idle sat while weir was late (see MAX_LATE).
                let budget = match reused {
                    true => &mut spare,
                    false => &mut late,
                };
                let resend = match (idle_closed && *budget > 0, back) {
                    (true, Some(b)) => Ok(b),
                    (true, None) => again.map(Payload::Bytes).ok_or(None),
                    (false, back) => Err(back),
                };
                match resend {
                    Ok(b) => {
                        tracing::debug!(
                            %error,
                            reused,
                            "upstream connection closed by the backend before it read the request; sending it on a new one"
                        );
                        body = b;
                        fresh_only = true;
                        *budget -= 1;
                    }
                    Err(back) => {
                        tracing::debug!(
                            %error,
                            reused,
                            ?silent_for,
                            answered,
                            delivered = !error.not_delivered(),
                            spare,
                            late,
                            "upstream send failed, not sent again within the try"
                        );
                        *unsent = back;
                        return Err(error);
                    }
                }
            }
        }
    }
}
