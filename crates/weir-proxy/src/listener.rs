//! Listening sockets and their accept loops. A listener is identified by its
//! bind address: a reload that keeps the address keeps the socket (and its
//! slot in the snapshot), so no connection attempt is ever refused by a reload.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::warn;
use weir_config::Protocol;

use crate::codec::h1::server::Socket;
use crate::http::conn::{serve as serve_http, ClientLimits};
use crate::http::conn_state::ConnState;
use crate::http::forward::ConnCtx;
use crate::http::headers::client_ip_value;
use crate::metrics::{Held, GLOBAL};
use crate::tcp::session::serve as serve_tcp;
use crate::Shared;

#[derive(Debug, thiserror::Error)]
#[error("cannot listen on {addr}: {source}")]
pub struct BindError {
    pub addr: SocketAddr,
    #[source]
    pub source: io::Error,
}

/// A bound socket not yet accepting (so a failed reload can drop it unused).
pub struct Bound {
    pub addr: SocketAddr,
    socket: std::net::TcpListener,
}

pub fn bind(addr: SocketAddr, protocol: Protocol) -> Result<Bound, BindError> {
    let err = |source| BindError { addr, source };
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )
    .map_err(err)?;
    // Restarting weir must not wait for TIME_WAIT sockets of the last run.
    socket.set_reuse_address(true).map_err(err)?;
    socket.set_nonblocking(true).map_err(err)?;
    // Accepted sockets inherit TCP_NODELAY on Linux: one system call per
    // connection less than setting it on each.
    socket.set_tcp_nodelay(true).map_err(err)?;
    socket.bind(&addr.into()).map_err(err)?;
    socket.listen(4096).map_err(err)?;
    defer_accept(&socket, protocol).map_err(err)?;
    Ok(Bound {
        addr,
        socket: socket.into(),
    })
}

/// HTTP listeners accept a connection only once its first bytes have
/// arrived (TCP_DEFER_ACCEPT, as Apache's default `AcceptFilter http data`
/// and nginx's `deferred`): the first read then finds the request instead
/// of answering EAGAIN and waiting for a wakeup, and connections that send
/// nothing cost no task. One that stays silent is accepted after about a
/// second anyway, so its header timeout still runs. TCP listeners accept at
/// once: their protocol may have the server speak first.
fn defer_accept(socket: &socket2::Socket, protocol: Protocol) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let secs: libc::c_int = match protocol {
            Protocol::Http => 1,
            Protocol::Tcp => 0,
        };
        // SAFETY: a valid socket, and an int-sized option value.
        let rc = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_DEFER_ACCEPT,
                (&secs as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (socket, protocol);
    Ok(())
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

pub fn start(bound: Bound, slot: usize, shared: Arc<Shared>) -> io::Result<Running> {
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
    tokio::spawn(accept_loop(listener, slot, shared, drain, kill, tracker));
    Ok(running)
}

/// The listening socket, polled for readiness only: accepting is ours.
type Listener = AsyncFd<std::net::TcpListener>;

/// Accepts one connection, non-blocking and close-on-exec, without
/// registering it with the runtime as tokio's `accept` would: an HTTP
/// client socket registers only once it must wait (codec/h1/server/socket.rs).
async fn accept(l: &Listener) -> io::Result<(std::net::TcpStream, SocketAddr)> {
    loop {
        let mut guard = l.readable().await?;
        match guard.try_io(|l| accept4(l.get_ref())) {
            Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
            Ok(r) => return r,
            Err(_would_block) => continue,
        }
    }
}

fn accept4(l: &std::net::TcpListener) -> io::Result<(std::net::TcpStream, SocketAddr)> {
    // SAFETY: accept4 writes at most `len` bytes of address into `storage`
    // and the length it wrote into `len`, as try_init expects.
    let (fd, addr) = unsafe {
        socket2::SockAddr::try_init(|storage, len| {
            let fd = libc::accept4(
                l.as_raw_fd(),
                storage.cast(),
                len,
                libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            );
            if fd < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(fd)
            }
        })?
    };
    // SAFETY: a fresh fd from accept4, owned by nothing else.
    let stream = unsafe { std::net::TcpStream::from_raw_fd(fd) };
    let addr = addr
        .as_socket()
        .ok_or_else(|| io::Error::other("accepted a socket without an IP address"))?;
    Ok((stream, addr))
}

async fn accept_loop(
    listener: Arc<Listener>,
    slot: usize,
    shared: Arc<Shared>,
    drain: CancellationToken,
    kill: CancellationToken,
    tracker: TaskTracker,
) {
    // Made once: a `cancelled()` per accepted connection would register
    // and unregister with the token each time.
    let stop = drain.cancelled();
    tokio::pin!(stop);
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
        match l.protocol {
            Protocol::Http => {
                let ctx = Arc::new(ConnCtx {
                    shared: shared.clone(),
                    slot,
                    client,
                    client_ip: client_ip_value(client.ip()),
                    state: ConnState::new(),
                });
                let limits = ClientLimits {
                    header_timeout: l.header_timeout,
                    idle_timeout: l.idle_timeout,
                    max_header_bytes: l.max_header_bytes,
                };
                // Boxed where built: spawning moves a future three times
                // (task cell, scheduler, first poll), and these are
                // kilobytes (a TCP session's 1.8 KB was ~1.3k instructions
                // of memcpy per connection); a box moves as a pointer.
                let stream = Socket::new(stream);
                let conn = Box::pin(serve_http(stream, ctx, limits, drain.clone(), kill.clone()));
                tracker.spawn(async move {
                    conn.await;
                    drop(open);
                });
            }
            Protocol::Tcp => {
                let Some(pool) = l.pool.clone() else { continue };
                let stream = match tokio::net::TcpStream::from_std(stream) {
                    Ok(s) => s,
                    Err(e) => {
                        warn!("registering an accepted connection: {e}");
                        continue;
                    }
                };
                // The listener's counters (a tcp listener's only target).
                let Some(metrics) = l.routes.lookup(None, "/").map(|t| t.metrics.clone()) else {
                    continue;
                };
                let session = Box::pin(serve_tcp(
                    stream,
                    client,
                    l.name.clone(),
                    pool,
                    metrics,
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
}
