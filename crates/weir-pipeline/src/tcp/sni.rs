//! SNI passthrough: a tcp listener with `sni_routing` reads each connection's ClientHello
//! (without decrypting anything: `weir_tls::hello` has rustls parse it), picks a pool by
//! its server name through the listener's route table (the `sni` routes, matched as http
//! hosts are), then runs an ordinary tcp session that first replays the bytes read.
//!
//! The hello stage is bounded in bytes (`MAX_HELLO`) and time (the listener's
//! `header_timeout`), and each connection is its own task, so a slow or silent client
//! holds a few kilobytes and delays nobody.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::BufMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::debug;
use weir_tls::hello::{Hello, Peeker};

use crate::race::race;
use crate::snapshot::SnapshotCell;
use crate::tcp::passed::Passed;
use crate::tcp::passthrough::{Outcome, Passthrough};
use crate::tcp::session::{serve as serve_session, Addrs, TcpClient};
use weir_metrics::reason::Reason;

/// The most of a ClientHello read before giving up on it. A hello may span several
/// records; with post-quantum key shares it is about 1.5–2 KiB, and real ones stay far
/// below this. Reaching it without a complete hello is `too_large`.
pub const MAX_HELLO: usize = 16 * 1024;

/// How much room each read is given: a typical hello fits in one step, and a client
/// that stops halfway holds no more than this beyond what it sent.
const READ_STEP: usize = 2048;

/// Why a connection's hello stage failed.
#[derive(Debug, thiserror::Error)]
pub enum HelloError {
    #[error("not a TLS ClientHello")]
    NotTls,
    #[error("no complete ClientHello in {MAX_HELLO} bytes")]
    TooLarge,
    #[error("no complete ClientHello within the header_timeout")]
    Timeout,
    #[error("the client closed before its ClientHello was complete ({read} bytes read)")]
    ClientClosed { read: usize },
    #[error("reading the ClientHello: {0}")]
    Read(#[source] io::Error),
}

impl HelloError {
    fn outcome(&self) -> Outcome {
        match self {
            HelloError::NotTls => Outcome::NotTls,
            HelloError::TooLarge => Outcome::TooLarge,
            HelloError::Timeout => Outcome::Timeout,
            HelloError::ClientClosed { .. } | HelloError::Read(_) => Outcome::ClientClosed,
        }
    }
}

/// What a passthrough connection needs from its listener at accept.
pub struct Accepted {
    pub shared: Arc<SnapshotCell>,
    pub slot: usize,
    pub listener: Arc<str>,
    pub counts: Arc<Passthrough>,
    pub header_timeout: Duration,
    pub kill: CancellationToken,
}

pub async fn serve(mut client: TcpStream, addrs: Addrs, a: Accepted) {
    let peer = addrs.client;
    let deadline = Instant::now() + a.header_timeout;
    let mut read = None;
    race(
        async {
            read = Some(
                match tokio::time::timeout_at(deadline, read_hello(&mut client)).await {
                    Ok(r) => r,
                    Err(_) => Err(HelloError::Timeout),
                },
            )
        },
        a.kill.cancelled(),
    )
    .await;
    let Some(read) = read else {
        debug!(listener = &*a.listener, client = %peer, "connection cut at drain grace before its ClientHello");
        return;
    };
    let passed = match read {
        Ok(p) => p,
        Err(e) => {
            a.counts.record(e.outcome());
            if matches!(e, HelloError::ClientClosed { read: 0 }) {
                // A connect without a byte is what port probes and tcp health checks
                // do: counted, but not worth a warning each.
                debug!(listener = &*a.listener, client = %peer, "connection closed before any byte");
            } else {
                weir_metrics::warn_limited!(
                    (&*a.listener, e.outcome().as_str()),
                    listener = &*a.listener,
                    client = %peer,
                    reason = e.outcome().as_str(),
                    "tcp session refused: {e}"
                );
            }
            return;
        }
    };
    // The routes as they are now (a reload may have come while the hello arrived).
    let routed = {
        let snap = a.shared.snapshot.load();
        let Some(Some(l)) = snap.listeners.get(a.slot) else {
            return;
        };
        match l.routes.lookup(passed.sni.as_deref(), "/") {
            Some(t) => Ok((t.clone(), l.idle_timeout)),
            None => {
                l.no_route
                    .no_endpoint
                    .record_session(Some(Reason::RouteNotFound));
                Err(())
            }
        }
    };
    let Ok((target, idle_timeout)) = routed else {
        a.counts.record(Outcome::NoRoute);
        weir_metrics::warn_limited!(
            (&*a.listener, passed.sni.as_deref()),
            listener = &*a.listener,
            client = %peer,
            reason = Outcome::NoRoute.as_str(),
            sni = passed.sni.as_deref(),
            "tcp session refused: no route for this server name and no fallback pool; answered unrecognized_name"
        );
        // Bounded like the read: a client that reads nothing cannot hold the task.
        let _ = tokio::time::timeout_at(deadline, async {
            client
                .write_all(&weir_tls::hello::UNRECOGNIZED_NAME_ALERT)
                .await?;
            client.shutdown().await
        })
        .await;
        return;
    };
    a.counts.record(if target.route.is_some() {
        Outcome::Routed
    } else {
        Outcome::Fallback
    });
    serve_session(
        TcpClient::Passthrough(client, passed),
        addrs,
        a.listener,
        target,
        idle_timeout,
        a.kill,
    )
    .await;
}

/// Reads until the bytes are a complete ClientHello, or cannot be one.
async fn read_hello(client: &mut TcpStream) -> Result<Passed, HelloError> {
    let mut bytes: Vec<u8> = Vec::new();
    // Boxed: the acceptor's state would otherwise sit in this task's future, which
    // is moved when spawned.
    let mut peeker = Box::new(Peeker::new());
    loop {
        if bytes.len() >= MAX_HELLO {
            return Err(HelloError::TooLarge);
        }
        if bytes.len() == bytes.capacity() {
            bytes.reserve_exact(READ_STEP.min(MAX_HELLO - bytes.len()));
        }
        let from = bytes.len();
        let n = client
            .read_buf(&mut (&mut bytes).limit(MAX_HELLO - from))
            .await
            .map_err(HelloError::Read)?;
        if n == 0 {
            return Err(HelloError::ClientClosed { read: from });
        }
        match peeker.feed(&bytes[from..]) {
            Hello::Incomplete => {}
            Hello::Sni(name) => {
                return Ok(Passed {
                    bytes,
                    sni: Some(name),
                })
            }
            Hello::NoSni => return Ok(Passed { bytes, sni: None }),
            Hello::NotTls => return Err(HelloError::NotTls),
        }
    }
}
