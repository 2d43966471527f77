//! Opening a connection to an endpoint, bounded by the pool's connect timeout.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpStream;

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("connect to {addr} timed out after {timeout:?}")]
    Timeout { addr: SocketAddr, timeout: Duration },
    #[error("connect to {addr}: {source}")]
    Io {
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },
}

pub async fn connect(addr: SocketAddr, timeout: Duration) -> Result<TcpStream, ConnectError> {
    match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
        Ok(Ok(s)) => {
            // Small requests and responses must not wait for Nagle.
            let _ = s.set_nodelay(true);
            Ok(s)
        }
        Ok(Err(source)) => Err(ConnectError::Io { addr, source }),
        Err(_) => Err(ConnectError::Timeout { addr, timeout }),
    }
}
