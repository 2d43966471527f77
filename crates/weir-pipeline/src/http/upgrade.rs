//! HTTP/1.1 Upgrade (WebSocket and any other protocol) through the proxy.
//!
//! A request asks for one with `Connection: upgrade` and `Upgrade` (GET,
//! HTTP/1.1, no body): those two fields then go upstream (`rewrite.rs`),
//! the request is sent once on a fresh connection (`tries.rs`: only a
//! failed connect tries another endpoint), and a `101` to a protocol it
//! offered comes back with the upstream stream inside the response body
//! (`UpstreamResponseBody::take_upgraded`). The server codec writes the 101 head
//! and hands over the client's stream (`Serve::switched`); from then on weir
//! only relays bytes: it never reads the new protocol. Plain on both sides,
//! with the TCP proxy's relay (`tcp/relay.rs`: small reads copied, bulk
//! spliced, zero-copy); through TLS on either side, with `tcp/copy.rs`.
//!
//! The relay holds the endpoint slot and the request's recorder until it
//! ends (one access log line, status 101), is counted in
//! `weir_upgraded_connections{pool}`, idles out after the listener's
//! `upgrade_idle_timeout`, and is tied to its endpoint, not to the
//! snapshot: a reload that keeps the endpoint leaves it alone; removing the
//! endpoint cuts it after the drain grace (`EndpointRt::cut`), and a drain
//! of the listener or weir's stop cuts it through the connection's kill
//! (`http/conn.rs`: the connection stays busy while it relays).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, Version};
use http_body::Body;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tracing::debug;

use crate::http::conn_ctx::ConnCtx;
use crate::race::race;
use weir_codec::server::{Handoff, Switched};
use weir_h1::fields::has_token;
use weir_http::body::ProxyBody;
use weir_metrics::{Held, GLOBAL};
use weir_transport::{copy, relay};
use weir_transport::{ClientStream, UpstreamStream};
use weir_upstream::metrics::pool::PoolMetrics;

/// When the listener is gone from the snapshot by the time of the switch.
const FALLBACK_IDLE: Duration = weir_config::defaults::UPGRADE_IDLE_TIMEOUT;

/// The protocols the request offers, if it asks to switch and may: GET,
/// HTTP/1.1, `Connection: upgrade`, `Upgrade`, and no body (bytes after the
/// head must be the new protocol's, never a body weir would have to frame).
pub fn asked<B: Body>(req: &Request<B>) -> Option<HeaderValue> {
    if req.method() != Method::GET || req.version() != Version::HTTP_11 {
        return None;
    }
    let h = req.headers();
    let upgrade = h.get(header::UPGRADE)?;
    let wants = h
        .get_all(header::CONNECTION)
        .iter()
        .any(|v| has_token(v.as_bytes(), "upgrade"));
    let bodiless = !h.contains_key(header::CONTENT_LENGTH)
        && !h.contains_key(header::TRANSFER_ENCODING)
        && req.body().is_end_stream();
    (wants && bodiless).then(|| upgrade.clone())
}

/// Puts the upgrade back after the hop-by-hop fields were removed: it is
/// the one connection-level exchange the upstream hop must see.
pub fn keep(h: &mut HeaderMap, upgrade: HeaderValue) {
    h.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    h.insert(header::UPGRADE, upgrade);
}

/// Counts an upgraded connection for its pool while it lives.
struct Upgraded(Arc<PoolMetrics>);

impl Upgraded {
    fn new(m: Arc<PoolMetrics>) -> Self {
        m.upgraded.fetch_add(1, Relaxed);
        Upgraded(m)
    }
}

impl Drop for Upgraded {
    fn drop(&mut self) {
        self.0.upgraded.fetch_sub(1, Relaxed);
    }
}

/// Relays a switched connection until both sides are done, it idles out,
/// or its endpoint is cut.
/// `client` is the client's side: a whole connection (with what it sent behind the request
/// head), or one stream of it (an HTTP/2 extended CONNECT, RFC 8441).
pub async fn relay(ctx: &ConnCtx, mut body: ProxyBody, client: Switched) {
    let Some(up) = body.take_upgrade() else {
        return;
    };
    let idle = ctx
        .shared
        .snapshot
        .load()
        .listeners
        .get(ctx.slot)
        .and_then(|l| l.as_ref())
        .map_or(FALLBACK_IDLE, |l| l.upgrade_idle_timeout);
    let _count = Upgraded::new(up.pool.shared.metrics.clone());
    let _open = Held::new(&GLOBAL.upstream_open);
    let cut = up.endpoint.cut.clone();
    let (sent, received) = (AtomicU64::new(0), AtomicU64::new(0));
    let mut upstream = up.upgraded.stream;
    let rest = up.upgraded.rest;
    let work = async {
        // Bytes each side sent right behind the handshake come first.
        let relayed = match client {
            Switched::Connection(Handoff {
                reader,
                read,
                mut writer,
            }) => {
                if !pass_on(&mut upstream, read, idle, &sent).await
                    || !pass_on(&mut writer, rest, idle, &received).await
                {
                    return;
                }
                let timer = tokio::time::sleep(idle);
                tokio::pin!(timer);
                // Plain on both sides: the TCP relay's own path, which splices bulk
                // transfers (zero-copy); through TLS, the generic copy.
                match upstream {
                    UpstreamStream::Plain(up) => {
                        match ClientStream::reunite_plain(reader, writer) {
                            Ok(Ok(c)) => relay::relay(c, up, idle, &sent, &received, timer).await,
                            Ok(Err(e)) => Err(e),
                            Err((reader, writer)) => {
                                let c = tokio::io::join(reader, writer);
                                let up = UpstreamStream::Plain(up);
                                copy::relay(c, up, idle, &sent, &received, timer).await
                            }
                        }
                    }
                    up => {
                        let c = tokio::io::join(reader, writer);
                        copy::relay(c, up, idle, &sent, &received, timer).await
                    }
                }
            }
            Switched::Stream(mut tunnel) => {
                if !pass_on(&mut tunnel, rest, idle, &received).await {
                    return;
                }
                let timer = tokio::time::sleep(idle);
                tokio::pin!(timer);
                copy::relay(tunnel, upstream, idle, &sent, &received, timer).await
            }
        };
        if let Err(e) = relayed {
            debug!("upgraded connection ended: {e}");
        }
    };
    let cut = async {
        cut.cancelled().await;
        debug!("upgraded connection cut: its endpoint was removed and the drain grace is over");
    };
    race(work, cut).await;
    up.endpoint
        .metrics
        .bytes_in
        .fetch_add(sent.load(Relaxed), Relaxed);
    // The access log's bytes are those sent to the client, as for any answer.
    body.upgrade_ended(received.load(Relaxed));
}

/// Writes what one side sent behind the handshake to the other (within `idle`), counted in
/// `count`, then lets go of the buffer it came in: the whole read buffer of the handshake
/// (the backend's 16 KiB, the client's 8 KiB or more), which a quiet relay must not keep.
/// Whether the relay may go on.
async fn pass_on<W: AsyncWrite + Unpin>(
    w: &mut W,
    bytes: BytesMut,
    idle: Duration,
    count: &AtomicU64,
) -> bool {
    if bytes.is_empty() {
        return true;
    }
    let written = async {
        w.write_all(&bytes).await?;
        w.flush().await
    };
    match tokio::time::timeout(idle, written).await {
        Ok(Ok(())) => {
            count.fetch_add(bytes.len() as u64, Relaxed);
            true
        }
        Ok(Err(e)) => {
            debug!("upgraded connection ended: {e}");
            false
        }
        Err(_) => {
            debug!("upgraded connection idled out");
            false
        }
    }
}
