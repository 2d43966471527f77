//! An upstream address that never completes a TCP handshake, on loopback:
//! a listener with a full accept queue (backlog 0 and one connection never
//! accepted), whose kernel drops every new SYN, so a connect to it hangs
//! until the connecting side gives up. For connect timeouts.

use std::io;
use std::net::{SocketAddr, TcpStream};

use socket2::{Domain, Socket, Type};

pub struct BlackHole {
    addr: SocketAddr,
    _listener: Socket,
    _held: TcpStream,
}

impl BlackHole {
    pub fn new() -> io::Result<BlackHole> {
        let listener = Socket::new(Domain::IPV4, Type::STREAM, None)?;
        listener.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())?;
        listener.listen(0)?;
        let addr = listener
            .local_addr()?
            .as_socket()
            .ok_or_else(|| io::Error::other("not an inet address"))?;
        // Backlog 0: this one connection fills the accept queue.
        let held = TcpStream::connect(addr)?;
        Ok(BlackHole {
            addr,
            _listener: listener,
            _held: held,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}
