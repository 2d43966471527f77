//! The floor on epoll: tokio's current-thread runtime, one task per client
//! connection with its own upstream connection and one buffer for both ways.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::http::{RequestFramer, ResponseFramer};

pub fn run(listen: SocketAddr, upstream: SocketAddr) -> crate::Res {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    rt.block_on(async {
        let listener = TcpListener::bind(listen).await?;
        loop {
            let (client, _) = listener.accept().await?;
            tokio::spawn(async move {
                if let Err(e) = conn(client, upstream).await {
                    eprintln!("floor: {e}");
                }
            });
        }
    })
}

async fn conn(mut client: TcpStream, upstream: SocketAddr) -> std::io::Result<()> {
    let mut up = TcpStream::connect(upstream).await?;
    client.set_nodelay(true)?;
    up.set_nodelay(true)?;
    let mut buf = vec![0u8; super::args::BUF_SIZE];
    let (mut requests, mut responses) = (RequestFramer::default(), ResponseFramer::default());
    loop {
        // Forward the request's chunks until its head has ended...
        let mut pending = 0;
        while pending == 0 {
            let n = client.read(&mut buf).await?;
            if n == 0 {
                return Ok(());
            }
            pending = requests.feed(&buf[..n]);
            up.write_all(&buf[..n]).await?;
        }
        // ...then the response's, until as many responses have ended.
        while pending > 0 {
            let n = up.read(&mut buf).await?;
            if n == 0 {
                return Ok(());
            }
            pending = pending.saturating_sub(responses.feed(&buf[..n]));
            client.write_all(&buf[..n]).await?;
        }
    }
}
