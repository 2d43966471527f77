//! The fake HTTP/1.1 backend's handle and builder: configuration, counters, request log,
//! lifecycle. What its connections share with it is in shared.rs.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::HeaderValue;

use crate::body::pattern;
use crate::latency::Latency;
use crate::listener::{ConnFn, Listener};
use crate::shared::{RequestRecord, UpstreamState};

/// A running fake HTTP/1.1 backend on 127.0.0.1. Dropping it stops it.
///
/// Routes (any method; every response carries `x-upstream: NAME` and `x-upstream-conn: ID`):
/// - default: 200, body `NAME\n` (or `body_size` pattern bytes);
/// - `/healthz`: 200 `ok` / 503 per [`set_healthy`](Self::set_healthy); bypasses latency,
///   worker slots and the request counters;
/// - `/echo`: streams the request body back;
/// - `/__ids`: JSON `{ids, duplicates}`: distinct `x-request-id` values seen, and
///   requests whose id was seen before (bypasses the counters, like `/healthz`);
/// - `/headers`: JSON `{upstream, method, uri, version, headers: [[name, value]..], body_len}`;
/// - `/status/{code}`: that status, body `NAME\n` (none for 204/304);
/// - `/bytes/{n}`: `n` bytes of [`pattern`](crate::pattern), with Content-Length;
/// - `/chunked/{n}?delay_ms=D`: `n` chunks `chunk i\n`, `D` ms apart;
/// - `/close`: close-delimited `NAME\n`, then the connection closes.
///
/// Query `latency_ms=N` overrides the latency for one request; `hang=1` never answers.
pub struct HttpUpstream {
    shared: Arc<UpstreamState>,
    listener: Listener,
}

impl HttpUpstream {
    pub fn builder(name: &str) -> HttpUpstreamBuilder {
        HttpUpstreamBuilder {
            name: name.to_owned(),
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            latency: Latency::None,
            max_concurrency: None,
            idle_close: None,
            keep_alive_secs: None,
            body_size: None,
            record_log: true,
            h2c: false,
        }
    }

    /// A backend with default settings on 127.0.0.1, any port.
    pub async fn spawn(name: &str) -> io::Result<HttpUpstream> {
        Self::builder(name).spawn().await
    }

    pub fn addr(&self) -> SocketAddr {
        self.listener.addr()
    }

    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// `http://ADDR{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr(), path)
    }

    /// Requests received (head and body), `/healthz` excluded.
    pub fn requests(&self) -> u64 {
        self.shared.requests.load(Relaxed)
    }

    /// Requests whose `x-request-id` this backend had seen before.
    pub fn duplicates(&self) -> u64 {
        self.shared.duplicates.load(Relaxed)
    }

    /// `/healthz` requests received.
    pub fn health_checks(&self) -> u64 {
        self.shared.health_checks.load(Relaxed)
    }

    /// Requests holding a worker slot right now.
    pub fn in_flight(&self) -> u64 {
        self.shared.in_flight.load(Relaxed)
    }

    /// High-water mark of `in_flight` since start or `reset_stats`.
    pub fn max_in_flight(&self) -> u64 {
        self.shared.max_in_flight.load(Relaxed)
    }

    /// TCP connections accepted.
    /// Connections open right now (a load balancer's pooled ones included).
    pub fn open_connections(&self) -> u64 {
        self.shared.open.load(Relaxed)
    }

    pub fn connections(&self) -> u64 {
        self.shared.connections.load(Relaxed)
    }

    pub fn log(&self) -> Vec<RequestRecord> {
        self.shared.log.lock().unwrap().clone()
    }

    /// `/healthz` answers 200 `ok` when healthy, 503 otherwise.
    pub fn set_healthy(&self, healthy: bool) {
        self.shared.healthy.store(healthy, Relaxed);
    }

    pub fn is_running(&self) -> bool {
        self.listener.is_running()
    }

    /// Stops listening and drops every open connection at once (requests in progress get
    /// no answer). Returns when all are closed.
    pub async fn stop(&self) {
        self.listener.stop().await;
    }

    /// Stops like a well-behaved server being restarted: stops listening,
    /// closes idle keep-alive connections, lets requests in progress finish
    /// (their responses carry `Connection: close`), and returns when every
    /// connection is gone.
    pub async fn shutdown_gracefully(&self) {
        self.listener
            .stop_with(|| {
                self.shared.drain.send_modify(|g| *g += 1);
            })
            .await;
    }

    /// Listens again on the same port. Panics if the port cannot be bound; see `try_start`.
    pub async fn start(&self) {
        if let Err(e) = self.try_start().await {
            panic!("upstream {}: rebind {}: {e}", self.name(), self.addr());
        }
    }

    pub async fn try_start(&self) -> io::Result<()> {
        self.listener.start()
    }

    /// Zeroes the counters and the log; `max_in_flight` restarts from the current in-flight.
    pub fn reset_stats(&self) {
        let s = &self.shared;
        s.requests.store(0, Relaxed);
        s.health_checks.store(0, Relaxed);
        s.connections.store(0, Relaxed);
        s.max_in_flight.store(s.in_flight.load(Relaxed), Relaxed);
        s.log.lock().unwrap().clear();
    }
}

/// Options of an [`HttpUpstream`].
#[derive(Clone, Debug)]
pub struct HttpUpstreamBuilder {
    name: String,
    addr: SocketAddr,
    latency: Latency,
    max_concurrency: Option<usize>,
    idle_close: Option<Duration>,
    keep_alive_secs: Option<u64>,
    body_size: Option<usize>,
    record_log: bool,
    h2c: bool,
}

impl HttpUpstreamBuilder {
    /// Serve cleartext HTTP/2 with prior knowledge (h2c) instead of HTTP/1.1: every
    /// route but `/close`, with `conn_id` per connection as before. No idle closer.
    pub fn h2c(mut self) -> Self {
        self.h2c = true;
        self
    }

    /// Default 127.0.0.1:0.
    pub fn addr(mut self, a: SocketAddr) -> Self {
        self.addr = a;
        self
    }

    pub fn latency(mut self, l: Latency) -> Self {
        self.latency = l;
        self
    }

    /// Like `n` worker processes: request `n+1` waits until a worker is free. 0 = no cap.
    pub fn max_concurrency(mut self, n: usize) -> Self {
        self.max_concurrency = (n > 0).then_some(n);
        self
    }

    /// Silently close (FIN, no response) a connection idle for longer than `d`.
    pub fn idle_close(mut self, d: Duration) -> Self {
        self.idle_close = Some(d);
        self
    }

    /// Send `Keep-Alive: timeout=N` on every response.
    pub fn keep_alive_timeout_header(mut self, secs: u64) -> Self {
        self.keep_alive_secs = Some(secs);
        self
    }

    /// The default route answers `n` pattern bytes instead of `NAME\n`.
    pub fn body_size(mut self, n: usize) -> Self {
        self.body_size = Some(n);
        self
    }

    /// Keep a [`RequestRecord`] per request (default true). Off for long benchmarks.
    pub fn record_log(mut self, on: bool) -> Self {
        self.record_log = on;
        self
    }

    pub async fn spawn(self) -> io::Result<HttpUpstream> {
        let name_body = Bytes::from(format!("{}\n", self.name));
        let x_upstream = HeaderValue::from_str(&self.name)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "bad upstream name"))?;
        let shared = Arc::new(UpstreamState {
            default_body: self.body_size.map_or_else(|| name_body.clone(), pattern),
            name_body,
            name: self.name,
            x_upstream,
            keep_alive: self
                .keep_alive_secs
                .map(|s| HeaderValue::from_str(&format!("timeout={s}")).unwrap()),
            latency: self.latency,
            slots: self
                .max_concurrency
                .map(|n| Arc::new(tokio::sync::Semaphore::new(n))),
            idle_close: self.idle_close,
            record_log: self.record_log,
            h2c: self.h2c,
            healthy: AtomicBool::new(true),
            requests: AtomicU64::new(0),
            health_checks: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            max_in_flight: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            open: AtomicU64::new(0),
            next_conn_id: AtomicU64::new(0),
            log: Mutex::new(Vec::new()),
            ids: Mutex::default(),
            duplicates: AtomicU64::new(0),
            drain: tokio::sync::watch::channel(0).0,
        });
        let on_conn: ConnFn = {
            let shared = shared.clone();
            Arc::new(move |stream| Box::pin(crate::conn::serve(shared.clone(), stream)))
        };
        let listener = Listener::bind(self.addr, on_conn)?;
        Ok(HttpUpstream { shared, listener })
    }
}
