//! Listeners: their accept loops, and what starts each accepted connection
//! (the sockets themselves and accepting are `transport`'s). A listener is
//! identified by its
//! bind address: a reload that keeps the address keeps the socket (and its
//! slot in the snapshot), so no connection attempt is ever refused by a reload.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};
use weir_config::Protocol;

use weir_http::client_addr::trusts;
use weir_http::conn_info::ClientTls;
use weir_metrics::reason::Reason;
use weir_metrics::{Held, GLOBAL};
use weir_pipeline::http::conn::serve as serve_http;
use weir_pipeline::http::conn_ctx::ConnCtx;
use weir_pipeline::http::watch::Watch;
use weir_pipeline::race::race;
use weir_pipeline::snapshot::ListenerSnap;
use weir_pipeline::snapshot::SnapshotCell;
use weir_pipeline::tcp::session::{serve as serve_tcp, Addrs as TcpAddrs, TcpClient};
use weir_pipeline::tcp::sni::serve as serve_sni;
use weir_transport::proxy_protocol::refusals::{ProxyErrors, Refusal};
use weir_transport::proxy_protocol::{read_header, ReadError, Received, Tlvs};
use weir_transport::tls::{handshake, TlsServer};
use weir_transport::{accept, defer_accept, listen, ClientStream, Listener};

pub use weir_transport::BindError;

/// A bound socket not yet accepting (so a failed reload can drop it unused).
pub struct Bound {
    pub addr: SocketAddr,
    socket: std::net::TcpListener,
}

pub fn bind(addr: SocketAddr, protocol: Protocol) -> Result<Bound, BindError> {
    Ok(Bound {
        addr,
        socket: listen(addr, protocol)?,
    })
}

/// A running listener.
pub struct Running {
    pub slot: usize,
    pub local_addr: SocketAddr,
    /// Stop accepting; HTTP connections close once idle.
    pub drain: CancellationToken,
    /// Cut every remaining connection (drain grace over).
    pub kill: CancellationToken,
    pub tracker: TaskTracker,
    /// Weak: the accept loop owns the socket, which closes when it ends.
    socket: std::sync::Weak<Listener>,
}

impl Running {
    /// A reload kept this socket for a listener of `protocol`.
    pub fn set_protocol(&self, protocol: Protocol) {
        let Some(socket) = self.socket.upgrade() else {
            return;
        };
        if let Err(e) = defer_accept(&socket2::SockRef::from(socket.get_ref()), protocol) {
            warn!("TCP_DEFER_ACCEPT on {}: {e}", self.local_addr);
        }
    }

    /// Stops accepting and drains; connections still open after `grace` are cut.
    pub fn stop(&self, grace: Duration) {
        self.drain.cancel();
        self.tracker.close();
        let (kill, tracker) = (self.kill.clone(), self.tracker.clone());
        tokio::spawn(async move {
            if tokio::time::timeout(grace, tracker.wait()).await.is_err() {
                kill.cancel();
            }
        });
    }
}

pub fn start(bound: Bound, slot: usize, shared: Arc<SnapshotCell>) -> io::Result<Running> {
    // SAFETY: the AsyncFd owns the listening socket, so its fd stays open
    // (and the same) for as long as it is registered.
    let listener = unsafe { AsyncFd::register_with_interest(bound.socket, Interest::READABLE) }
        .map_err(|e| e.into_parts().1)?;
    let listener = Arc::new(listener);
    let local_addr = listener.get_ref().local_addr()?;
    let running = Running {
        slot,
        local_addr,
        drain: CancellationToken::new(),
        kill: CancellationToken::new(),
        tracker: TaskTracker::new(),
        socket: Arc::downgrade(&listener),
    };
    let (drain, kill, tracker) = (
        running.drain.clone(),
        running.kill.clone(),
        running.tracker.clone(),
    );
    // The listener's HTTP connections' timeouts, drain and kill: one task, ended by the kill
    // (or once drained with no connection left).
    let watch = Watch::new();
    tokio::spawn(watch.clone().run(drain.clone(), kill.clone()));
    tokio::spawn(accept_loop(
        listener, slot, shared, drain, kill, tracker, watch,
    ));
    Ok(running)
}

async fn accept_loop(
    listener: Arc<Listener>,
    slot: usize,
    shared: Arc<SnapshotCell>,
    drain: CancellationToken,
    kill: CancellationToken,
    tracker: TaskTracker,
    watch: Arc<Watch>,
) {
    // Made once: a `cancelled()` per accepted connection would register
    // and unregister with the token each time.
    let stop = drain.cancelled();
    tokio::pin!(stop);
    // The listening socket's address: the address clients reach, unless it is a wildcard.
    let bound = match listener.get_ref().local_addr() {
        Ok(a) => a,
        Err(e) => {
            warn!("a listening socket's address: {e}");
            return;
        }
    };
    loop {
        let (stream, client) = tokio::select! {
            biased;
            _ = &mut stop => return,
            r = accept(&listener) => match r {
                Ok(x) => x,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    warn!("accept on {:?}: {e}", listener.get_ref().local_addr().ok());
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let snap = shared.snapshot.load();
        let Some(Some(l)) = snap.listeners.get(slot) else {
            continue;
        };
        let open = Held::new(&GLOBAL.client_open);
        let conn = ConnStart {
            shared: shared.clone(),
            slot,
            drain: drain.clone(),
            kill: kill.clone(),
            tracker: tracker.clone(),
            watch: watch.clone(),
            open,
        };
        if let Some(errors) = &l.proxy_protocol {
            // The PROXY header first, in the connection's own task (it may be slow).
            let (trusted, timeout, name) = (l.trusted.clone(), l.header_timeout, l.name.clone());
            let errors = errors.clone();
            tracker.spawn(async move {
                let got =
                    receive_proxy(stream, client, trusted, timeout, &name, &errors, &conn.kill);
                let Some((sock, client, dst, tlvs)) = got.await else {
                    return;
                };
                let snap = conn.shared.snapshot.load();
                let Some(Some(l)) = snap.listeners.get(conn.slot) else {
                    return;
                };
                let local = dst.unwrap_or(bound);
                dispatch(l, Sock::Tokio(sock), client, local, tlvs, conn);
            });
            continue;
        }
        dispatch(l, Sock::Std(stream), client, bound, None, conn);
    }
}

/// What starting a connection needs besides the listener and the socket.
struct ConnStart {
    shared: Arc<SnapshotCell>,
    slot: usize,
    drain: CancellationToken,
    kill: CancellationToken,
    tracker: TaskTracker,
    /// Where an HTTP connection's timeouts, drain and kill come from.
    watch: Arc<Watch>,
    /// The connection counts as open until its task ends.
    open: Held,
}

/// An accepted socket: as accepted (not yet in epoll: an HTTP connection registers it
/// lazily), or registered already (its PROXY header was read).
enum Sock {
    Std(std::net::TcpStream),
    Tokio(tokio::net::TcpStream),
}

impl Sock {
    fn into_std(self) -> io::Result<std::net::TcpStream> {
        match self {
            Sock::Std(s) => Ok(s),
            // Stays non-blocking.
            Sock::Tokio(s) => s.into_std(),
        }
    }

    fn into_tokio(self) -> io::Result<tokio::net::TcpStream> {
        match self {
            Sock::Std(s) => tokio::net::TcpStream::from_std(s),
            Sock::Tokio(s) => Ok(s),
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        match self {
            Sock::Std(s) => s.local_addr(),
            Sock::Tokio(s) => s.local_addr(),
        }
    }
}

/// Reads a connection's PROXY header (`proxy_protocol`): only from a trusted peer, within
/// `header_timeout`, cut by the listener's kill. Gives the socket, the client it names
/// (the peer for `LOCAL`/`UNKNOWN`), the address the client connected to and the v2 TLVs
/// to pass on; `None` when the connection was closed, counted by why.
async fn receive_proxy(
    stream: std::net::TcpStream,
    peer: SocketAddr,
    trusted: Option<Arc<[weir_config::Cidr]>>,
    timeout: Duration,
    listener: &str,
    errors: &ProxyErrors,
    kill: &CancellationToken,
) -> Option<(
    tokio::net::TcpStream,
    SocketAddr,
    Option<SocketAddr>,
    Option<Tlvs>,
)> {
    let refuse = |r: Refusal, detail: &dyn std::fmt::Display| {
        errors.record(r);
        match r {
            Refusal::ClientClosed => {
                debug!(listener, client = %peer, reason = r.as_str(), "connection closed before its PROXY header: {detail}")
            }
            _ => {
                weir_metrics::warn_limited!((listener, r.as_str()), listener, client = %peer, reason = r.as_str(), "connection refused at its PROXY header: {detail}")
            }
        }
    };
    if !trusted.is_some_and(|t| trusts(&t, peer.ip())) {
        refuse(Refusal::Untrusted, &"the peer is not in trusted_proxies");
        return None;
    }
    let mut sock = match tokio::net::TcpStream::from_std(stream) {
        Ok(s) => s,
        Err(e) => {
            warn!("registering an accepted connection: {e}");
            return None;
        }
    };
    let read = tokio::select! {
        r = tokio::time::timeout(timeout, read_header(&mut sock)) => r,
        _ = kill.cancelled() => return None,
    };
    match read {
        Ok(Ok(Received {
            addrs: Some((src, dst)),
            tlvs,
        })) => Some((sock, src, Some(dst), tlvs)),
        Ok(Ok(Received { addrs: None, .. })) => Some((sock, peer, None, None)),
        Ok(Err(e @ ReadError::Malformed(_))) => {
            refuse(Refusal::Malformed, &e);
            None
        }
        Ok(Err(e)) => {
            refuse(Refusal::ClientClosed, &e);
            None
        }
        Err(_) => {
            refuse(
                Refusal::Timeout,
                &format_args!("none within header_timeout ({timeout:?})"),
            );
            None
        }
    }
}

/// Starts serving an accepted connection from `client` (its peer, or whom its PROXY
/// header named) by the listener's protocol, in a task of its own. `local`: the address
/// it connected to as far as known (the listening socket's, or the PROXY header's);
/// `tlvs`: what its v2 PROXY header brought, for the headers weir sends on.
fn dispatch(
    l: &ListenerSnap,
    stream: Sock,
    client: SocketAddr,
    local: SocketAddr,
    tlvs: Option<Tlvs>,
    c: ConnStart,
) {
    let ConnStart {
        shared,
        slot,
        drain,
        kill,
        tracker,
        watch,
        open,
    } = c;
    // A wildcard bind does not say which address the client reached; looked up only for
    // a listener that sends PROXY headers on.
    let local = match l.sends_proxy && local.ip().is_unspecified() {
        true => stream.local_addr().unwrap_or(local),
        false => local,
    };
    let addrs = TcpAddrs {
        client,
        local,
        tlvs: tlvs.clone(),
    };
    match l.protocol {
        Protocol::Http => {
            let mut ctx = ConnCtx::new(shared, slot, client, local, l.client_limits.clone());
            ctx.conn.proxy_tlvs = tlvs.map(Box::new);
            // Behind trusted proxies: whether this peer is one (its X-Forwarded-For is then
            // read, weir-http's `client_addr.rs`). A listener without the list pays nothing.
            if let Some(t) = &l.trusted {
                ctx.conn.trusted = trusts(t, client.ip()).then(|| t.clone());
            }
            if let Some(server) = &l.tls {
                let conn = Box::pin(serve_https(
                    stream,
                    server.clone(),
                    ctx,
                    drain.clone(),
                    kill.clone(),
                    watch,
                    open,
                ));
                tracker.spawn(conn);
                return;
            }
            let stream = match stream.into_std() {
                Ok(s) => s,
                Err(e) => {
                    warn!("an accepted connection: {e}");
                    return;
                }
            };
            // Not boxed: the connection's future is its small waiting state (a few
            // hundred bytes, `conn::serve`), so it lives in the task's own allocation.
            let conn = serve_http(
                ClientStream::plain(stream),
                Arc::new(ctx),
                drain.clone(),
                watch,
                open,
            );
            tracker.spawn(conn);
        }
        Protocol::Tcp => {
            if !l.filters.admits(client.ip()) {
                // Closed at once (dropping it), counted under the listener's pool.
                let m = l
                    .routes
                    .lookup(None, "/")
                    .map_or(&l.no_route, |t| &t.metrics);
                m.no_endpoint.record_session(Some(Reason::Forbidden));
                debug!(listener = &*l.name, %client, "connection refused by the listener's filters");
                return;
            }
            let stream = match stream.into_tokio() {
                Ok(s) => s,
                Err(e) => {
                    warn!("registering an accepted connection: {e}");
                    return;
                }
            };
            if let Some(counts) = &l.passthrough {
                // SNI passthrough: the pool is known once the ClientHello is read.
                let accepted = weir_pipeline::tcp::sni::Accepted {
                    shared: shared.clone(),
                    slot,
                    listener: l.name.clone(),
                    counts: counts.clone(),
                    header_timeout: l.header_timeout,
                    kill: kill.clone(),
                };
                let conn = Box::pin(serve_sni(stream, addrs, accepted));
                tracker.spawn(async move {
                    conn.await;
                    drop(open);
                });
                return;
            }
            // The listener's pool and counters (a tcp listener's only target).
            let Some(target) = l.routes.lookup(None, "/").cloned() else {
                return;
            };
            if let Some(server) = l.tls.clone() {
                // TLS terminated here: the handshake (bounded by handshake_timeout,
                // counted in weir_tls_handshakes_total), then plaintext to the pool.
                let (name, idle, kill) = (l.name.clone(), l.idle_timeout, kill.clone());
                let session = Box::pin(async move {
                    // Raced with the kill too: a drain grace shorter than the
                    // handshake timeout still ends it.
                    let mut conn = None;
                    race(
                        async { conn = handshake(stream, &server).await },
                        kill.cancelled(),
                    )
                    .await;
                    let Some(conn) = conn else { return };
                    serve_tcp(
                        TcpClient::Tls(Box::new(conn)),
                        addrs,
                        name,
                        target,
                        idle,
                        kill,
                    )
                    .await;
                });
                tracker.spawn(async move {
                    session.await;
                    drop(open);
                });
                return;
            }
            let session = Box::pin(serve_tcp(
                TcpClient::Plain(stream),
                addrs,
                l.name.clone(),
                target,
                l.idle_timeout,
                kill.clone(),
            ));
            tracker.spawn(async move {
                session.await;
                drop(open);
            });
        }
    }
}

/// A TLS connection: the handshake (bounded by its own timeout, cut by the drain
/// grace), then HTTP over it like any other connection.
async fn serve_https(
    sock: Sock,
    server: Arc<TlsServer>,
    mut ctx: ConnCtx,
    drain: CancellationToken,
    kill: CancellationToken,
    watch: Arc<Watch>,
    open: Held,
) {
    let Ok(sock) = sock.into_tokio() else {
        return;
    };
    let conn = tokio::select! {
        c = handshake(sock, &server) => c,
        _ = kill.cancelled() => None,
    };
    let Some(conn) = conn else { return };
    ctx.conn.set_tls(ClientTls {
        info: conn.info.clone(),
        identity_header: server.identity_header.clone(),
        cert_header: server.cert_header.clone(),
    });
    drop(server);
    serve_http(
        ClientStream::Tls(Box::new(conn)),
        Arc::new(ctx),
        drain,
        watch,
        open,
    )
    .await;
}
