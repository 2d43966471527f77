//! Fake TCP backend: optional greeting line, then echo until EOF, then half-close.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use crate::listener::{ConnFn, Listener};

/// A running fake TCP backend on 127.0.0.1. On connect it writes `NAME\n` (if `greeting`),
/// echoes every byte until the client's EOF, then shuts down its write side, so a proxy's
/// half-close handling is observable end to end.
pub struct TcpUpstream {
    name: String,
    counts: Arc<Counts>,
    listener: Listener,
}

#[derive(Default)]
struct Counts {
    connections: AtomicU64,
    active: AtomicU64,
}

impl TcpUpstream {
    pub async fn echo(name: &str, greeting: bool) -> io::Result<TcpUpstream> {
        Self::echo_on(SocketAddr::from(([127, 0, 0, 1], 0)), name, greeting).await
    }

    pub async fn echo_on(addr: SocketAddr, name: &str, greeting: bool) -> io::Result<Self> {
        let counts = Arc::new(Counts::default());
        let hello = greeting.then(|| format!("{name}\n"));
        let on_conn: ConnFn = {
            let counts = counts.clone();
            Arc::new(move |stream| Box::pin(echo(stream, hello.clone(), counts.clone())))
        };
        Ok(TcpUpstream {
            name: name.to_owned(),
            counts,
            listener: Listener::bind(addr, on_conn)?,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.listener.addr()
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Connections accepted.
    pub fn connections(&self) -> u64 {
        self.counts.connections.load(Relaxed)
    }

    /// Connections open right now.
    pub fn active(&self) -> u64 {
        self.counts.active.load(Relaxed)
    }

    /// Stops listening and drops every open connection.
    pub async fn stop(&self) {
        self.listener.stop().await;
    }

    /// Listens again on the same port; panics if it cannot.
    pub async fn start(&self) {
        if let Err(e) = self.listener.start() {
            panic!("upstream {}: rebind {}: {e}", self.name, self.addr());
        }
    }
}

async fn echo(mut stream: TcpStream, hello: Option<String>, counts: Arc<Counts>) {
    counts.connections.fetch_add(1, Relaxed);
    counts.active.fetch_add(1, Relaxed);
    // Decrement even when `stop` aborts this task mid-echo.
    struct Active(Arc<Counts>);
    impl Drop for Active {
        fn drop(&mut self) {
            self.0.active.fetch_sub(1, Relaxed);
        }
    }
    let _active = Active(counts);

    if let Some(h) = hello {
        if stream.write_all(h.as_bytes()).await.is_err() {
            return;
        }
    }
    let (r, mut w) = stream.split();
    let mut r = BufReader::with_capacity(64 * 1024, r);
    if tokio::io::copy_buf(&mut r, &mut w).await.is_ok() {
        let _ = w.shutdown().await;
    }
}
