//! A trickle of requests to the demo's own listener, so the dashboard's graphs move from the
//! start: a GET of `/` or `/headers` every 100 ms, each on a connection of its own, the
//! answer read and dropped.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

pub async fn trickle(listen: SocketAddr, stop: CancellationToken) {
    loop {
        let path = if fastrand::bool() { "/" } else { "/headers" };
        // A demo that cannot reach itself has nothing to add to the log.
        let _ = tokio::time::timeout(Duration::from_secs(5), get(listen, path)).await;
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
    }
}

async fn get(addr: SocketAddr, path: &str) -> io::Result<()> {
    let mut stream = TcpStream::connect(addr).await?;
    let req = format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n");
    stream.write_all(req.as_bytes()).await?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await?;
    Ok(())
}
