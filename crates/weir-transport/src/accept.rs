//! Listening and accepting: the socket options every listener gets, and
//! an accept that leaves the new socket out of epoll (a client stream
//! registers only once it must wait: `lazy.rs`).

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd};

use tokio::io::unix::AsyncFd;
use weir_config::Protocol;

#[derive(Debug, thiserror::Error)]
#[error("cannot listen on {addr}: {source}")]
pub struct BindError {
    pub addr: SocketAddr,
    #[source]
    pub source: io::Error,
}

/// A listening socket for `addr`, non-blocking, not yet accepting.
pub fn listen(addr: SocketAddr, protocol: Protocol) -> Result<std::net::TcpListener, BindError> {
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
    Ok(socket.into())
}

/// HTTP listeners accept a connection only once its first bytes have
/// arrived (TCP_DEFER_ACCEPT, as Apache's default `AcceptFilter http data`
/// and nginx's `deferred`): the first read then finds the request instead
/// of answering EAGAIN and waiting for a wakeup, and connections that send
/// nothing cost no task. One that stays silent is accepted after about a
/// second anyway, so its header timeout still runs. TCP listeners accept at
/// once: their protocol may have the server speak first.
pub fn defer_accept(socket: &socket2::Socket, protocol: Protocol) -> io::Result<()> {
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

/// The listening socket, polled for readiness only: accepting is ours.
pub type Listener = AsyncFd<std::net::TcpListener>;

/// Accepts one connection, non-blocking and close-on-exec, without
/// registering it with the runtime as tokio's `accept` would: an HTTP
/// client socket registers only once it must wait (`lazy.rs`).
pub async fn accept(l: &Listener) -> io::Result<(std::net::TcpStream, SocketAddr)> {
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
