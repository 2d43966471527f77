//! One TCP session: take a slot on an endpoint (queueing under `max_conn`
//! like HTTP requests do), connect (the next endpoint on failure), then relay
//! until both sides are done, the session idles out, or the drain grace of a
//! removed listener or a shutdown ends it. A session of an SNI passthrough listener
//! (`sni.rs`) first sends the upstream the ClientHello it already read.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::time::Sleep;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use crate::race::race;
use crate::router::Target;
use crate::tcp::passed::Passed;
use weir_metrics::reason::Reason;
use weir_transport::copy;
use weir_transport::proxy_protocol::{self, Tlvs};
use weir_transport::relay::relay;
use weir_transport::tls::TlsConn;
use weir_transport::UpstreamStream;
use weir_upstream::balance::ip_hash;
use weir_upstream::balance::{Algorithm, PickKey};
use weir_upstream::capacity::{self, Slot};
use weir_upstream::pool::PoolRt;

/// A session's client side.
pub enum TcpClient {
    /// A plain socket: relayed with splice.
    Plain(TcpStream),
    /// SNI passthrough: a plain socket whose ClientHello was read already; those bytes
    /// go upstream first.
    Passthrough(TcpStream, Passed),
    /// TLS that weir terminated (a tcp listener with `[tls]`): plaintext is relayed, by
    /// copying. Boxed: a rustls session is over a kilobyte.
    Tls(Box<TlsConn>),
}

/// Whose session it is: the client (the peer, or the source a PROXY header named) and
/// the address it connected to, which a `send_proxy` pool's header carries, with the TLVs
/// its own v2 PROXY header brought.
#[derive(Debug, Clone)]
pub struct Addrs {
    pub client: SocketAddr,
    pub local: SocketAddr,
    pub tlvs: Option<Tlvs>,
}

pub async fn serve(
    client: TcpClient,
    addrs: Addrs,
    listener: Arc<str>,
    target: Arc<Target>,
    idle_timeout: Duration,
    kill: CancellationToken,
) {
    let Target {
        route,
        pool,
        metrics,
        ..
    } = Target::clone(&target);
    // One timer for the whole session: the connect timeout, then idle.
    let peer = addrs.client;
    let timer = tokio::time::sleep(pool.connect_timeout);
    tokio::pin!(timer);
    let (upstream, slot) = match connect_any(&listener, &pool, addrs, timer.as_mut()).await {
        Ok(x) => x,
        Err(reason) => {
            metrics.no_endpoint.record_session(Some(reason));
            weir_metrics::warn_limited!(
                (&*listener, route.as_deref(), &*pool.name, reason.as_str()),
                listener = &*listener,
                route = route.as_deref(),
                pool = &*pool.name,
                reason = reason.as_str(),
                client = %peer,
                sni = match &client {
                    TcpClient::Passthrough(_, hello) => hello.sni.as_deref(),
                    TcpClient::Tls(c) => c.info.sni.as_deref(),
                    TcpClient::Plain(_) => None,
                },
                "tcp session refused"
            );
            return;
        }
    };
    let _upstream_open = weir_metrics::Held::new(&weir_metrics::GLOBAL.upstream_open);
    let cut = &slot.endpoint.cut;
    let session = async {
        let mut upstream = upstream;
        let mut timer = timer;
        let (sent, received) = (
            &slot.endpoint.metrics.bytes_in,
            &slot.endpoint.metrics.bytes_out,
        );
        let client = match client {
            TcpClient::Tls(client) => {
                // Decrypted here: copied, never spliced.
                let (r, w) = client.into_split();
                let client = tokio::io::join(r, w);
                let r = copy::relay(client, upstream, idle_timeout, sent, received, timer).await;
                if let Err(e) = r {
                    debug!(listener = &*listener, "tcp session ended: {e}");
                }
                return;
            }
            TcpClient::Plain(client) => client,
            TcpClient::Passthrough(client, hello) => {
                // The client's bytes so far, before anything it sends next; bounded
                // by the idle timeout like any write of the relay.
                timer
                    .as_mut()
                    .reset(tokio::time::Instant::now() + idle_timeout);
                let wrote = tokio::select! {
                    biased;
                    r = write_flushed(&mut upstream, &hello.bytes) => r,
                    _ = timer.as_mut() => Err(std::io::ErrorKind::TimedOut.into()),
                };
                if let Err(e) = wrote {
                    debug!(
                        listener = &*listener,
                        "tcp session ended sending the ClientHello: {e}"
                    );
                    return;
                }
                sent.fetch_add(
                    hello.bytes.len() as u64,
                    std::sync::atomic::Ordering::Relaxed,
                );
                client
            }
        };
        let r = match upstream {
            UpstreamStream::Plain(upstream) => {
                relay(client, upstream, idle_timeout, sent, received, timer).await
            }
            // A TLS pool: bytes are encrypted here, so splice cannot move them.
            upstream => copy::relay(client, upstream, idle_timeout, sent, received, timer).await,
        };
        if let Err(e) = r {
            debug!(listener = &*listener, "tcp session ended: {e}");
        }
    };
    // Raced rather than selected: a select polled both tokens (four mutex
    // operations) on every wake-up of the session, ~1k instructions each
    // short session (callgrind).
    let cut_or_killed = async {
        tokio::select! {
            biased;
            _ = cut.cancelled() => debug!(listener = &*listener, "tcp session cut: its endpoint was removed and the drain grace is over"),
            _ = kill.cancelled() => debug!(listener = &*listener, "tcp session cut at drain grace"),
        }
    };
    race(session, cut_or_killed).await;
    // Counted once it ends, as a request is once its response is done.
    if let Some(c) = metrics.by_endpoint.get(slot.index) {
        c.record_session(None);
    }
}

/// Takes a slot and connects; on a refused connect, frees the slot and tries
/// another endpoint, each at most once.
async fn connect_any(
    listener: &str,
    pool: &Arc<PoolRt>,
    addrs: Addrs,
    mut timer: Pin<&mut Sleep>,
) -> Result<(UpstreamStream, Slot), Reason> {
    let mut key = PickKey::default();
    if let Algorithm::Hash { .. } = pool.algorithm {
        key.hash = Some(ip_hash(addrs.client.ip()));
    }
    let proxy_header = pool
        .send_proxy
        .map(|v| proxy_protocol::header(v, Some((addrs.client, addrs.local)), addrs.tlvs.as_ref()));
    for _ in 0..pool.endpoints.len().max(1) {
        if (0..pool.endpoints.len()).all(|i| key.avoids(i)) {
            break;
        }
        let granted = capacity::acquire(pool, &key, None).await?;
        let ep = granted.slot.endpoint.clone();
        let started = std::time::Instant::now();
        timer
            .as_mut()
            .reset((started + pool.connect_timeout).into());
        // The connect timeout covers a TLS pool's handshake too.
        let tls = pool.tls.as_deref();
        let connected = UpstreamStream::connect_until(
            ep.addr,
            pool.connect_timeout,
            tls,
            weir_transport::Alpn::Tcp,
            proxy_header.as_deref(),
            timer.as_mut(),
        );
        match connected.await {
            Ok(s) => {
                // A session counts as the endpoint's "request"; its latency
                // is the time to connect.
                let took = started.elapsed();
                ep.metrics
                    .requests
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                ep.metrics.upstream.observe(took);
                ep.metrics.recent.observe(took);
                return Ok((s, granted.slot));
            }
            Err(e) => {
                ep.metrics.error(Reason::ConnectFailed);
                weir_metrics::warn_limited!(
                    (listener, &*pool.name, &*ep.addr_str),
                    listener,
                    pool = &*pool.name,
                    endpoint = &*ep.addr_str,
                    reason = Reason::ConnectFailed.as_str(),
                    "tcp connect failed, trying the next endpoint: {e}"
                );
                key.avoid(granted.slot.index);
            }
        }
    }
    Err(Reason::ConnectFailed)
}

/// Writes all of `bytes` and flushes (a TLS upstream may hold a record until flushed).
async fn write_flushed(upstream: &mut UpstreamStream, bytes: &[u8]) -> std::io::Result<()> {
    upstream.write_all(bytes).await?;
    upstream.flush().await
}
