//! [`GrpcUpstream`]: the Echo and Health services on a loopback port, with the counters
//! and lifecycle of the other fake backends (stop drops every connection, start listens
//! again on the same port).

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tonic_health::pb::health_server::HealthServer;
use tonic_health::server::{HealthReporter, HealthService};
use tonic_health::ServingStatus;

use super::calls::{CallRecord, GrpcCounters};
use super::echo::echo_server::{EchoServer, SERVICE_NAME};
use super::serve::{serve, Services};
use super::service::EchoService;
use crate::listener::{ConnFn, Listener};

/// A running gRPC backend on 127.0.0.1 serving `weir.test.Echo` and
/// `grpc.health.v1.Health`: h2c (HTTP/2 with prior knowledge), or h2 over TLS (ALPN
/// `h2`) when built with [`tls`](GrpcUpstreamBuilder::tls). Dropping it stops it.
///
/// Health starts SERVING for `""` (the whole server) and for `weir.test.Echo`. The
/// server does not enforce `grpc-timeout` (it echoes it in each reply), so a test sees
/// whether the proxy in front did.
pub struct GrpcUpstream {
    name: Arc<str>,
    shared: Arc<GrpcCounters>,
    health: HealthReporter,
    listener: Listener,
    tls: bool,
}

impl GrpcUpstream {
    pub fn builder(name: &str) -> GrpcUpstreamBuilder {
        GrpcUpstreamBuilder {
            name: name.to_owned(),
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            tls: None,
            record_log: true,
        }
    }

    /// h2c on 127.0.0.1, any port.
    pub async fn spawn(name: &str) -> io::Result<GrpcUpstream> {
        Self::builder(name).spawn().await
    }

    /// h2 over TLS on 127.0.0.1, any port, presenting `cert` (PEM chain) and `key`.
    pub async fn spawn_tls(
        name: &str,
        cert: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
    ) -> io::Result<GrpcUpstream> {
        Self::builder(name).tls(cert, key).spawn().await
    }

    pub fn addr(&self) -> SocketAddr {
        self.listener.addr()
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `http://ADDR` (or `https://ADDR` with TLS), for [`grpc_client`](super::grpc_client).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr())
    }

    /// Calls received (every request not to the health service), counted when the
    /// request head arrives, whatever the call then does.
    pub fn calls(&self) -> u64 {
        self.shared.calls.load(Relaxed)
    }

    /// The counter behind [`calls`](Self::calls), to read from elsewhere (a spawned task).
    pub fn calls_counter(&self) -> Arc<AtomicU64> {
        self.shared.calls.clone()
    }

    /// Calls to `grpc.health.v1.Health` received.
    pub fn health_checks(&self) -> u64 {
        self.shared.health_checks.load(Relaxed)
    }

    /// TCP connections accepted.
    pub fn connections(&self) -> u64 {
        self.shared.connections.load(Relaxed)
    }

    /// Connections open right now.
    pub fn open_connections(&self) -> u64 {
        self.shared.open.load(Relaxed)
    }

    /// Every call received, in order (empty when built with `record_log(false)`).
    pub fn log(&self) -> Vec<CallRecord> {
        self.shared.log.lock().unwrap().clone()
    }

    /// Zeroes the counters and the log.
    pub fn reset_stats(&self) {
        let s = &self.shared;
        s.calls.store(0, Relaxed);
        s.health_checks.store(0, Relaxed);
        s.connections.store(0, Relaxed);
        s.log.lock().unwrap().clear();
    }

    /// The health service's handle (tonic-health), for anything `set_serving` lacks.
    pub fn health(&self) -> &HealthReporter {
        &self.health
    }

    /// Sets `service` (`""` is the whole server) SERVING or NOT_SERVING; watchers of
    /// `Health/Watch` are told at once.
    pub async fn set_serving(&self, service: &str, serving: bool) {
        let status = if serving {
            ServingStatus::Serving
        } else {
            ServingStatus::NotServing
        };
        self.health.set_service_status(service, status).await;
    }

    pub fn is_running(&self) -> bool {
        self.listener.is_running()
    }

    /// Stops listening and drops every connection at once (calls in progress get a
    /// reset); returns when all are closed.
    pub async fn stop(&self) {
        self.listener.stop().await;
    }

    /// Listens again on the same port.
    pub fn start(&self) -> io::Result<()> {
        self.listener.start()
    }
}

/// Options of a [`GrpcUpstream`].
#[derive(Clone, Debug)]
pub struct GrpcUpstreamBuilder {
    name: String,
    addr: SocketAddr,
    tls: Option<(PathBuf, PathBuf)>,
    record_log: bool,
}

impl GrpcUpstreamBuilder {
    /// Default 127.0.0.1:0.
    pub fn addr(mut self, a: SocketAddr) -> Self {
        self.addr = a;
        self
    }

    /// Serve h2 over TLS with this certificate chain and key (PEM files, e.g. from
    /// [`crate::certs`]); ALPN offers `h2` only.
    pub fn tls(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        self.tls = Some((cert.into(), key.into()));
        self
    }

    /// Keep a [`CallRecord`] per call (default true). Off for benchmarks.
    pub fn record_log(mut self, on: bool) -> Self {
        self.record_log = on;
        self
    }

    pub async fn spawn(self) -> io::Result<GrpcUpstream> {
        let name: Arc<str> = self.name.into();
        let shared = Arc::new(GrpcCounters {
            calls: Arc::default(),
            health_checks: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            open: AtomicU64::new(0),
            record_log: self.record_log,
            log: Mutex::default(),
        });
        let health = HealthReporter::new();
        health
            .set_service_status(SERVICE_NAME, ServingStatus::Serving)
            .await;
        let services = Services {
            echo: EchoServer::new(EchoService { name: name.clone() }),
            health: HealthServer::new(HealthService::from_health_reporter(health.clone())),
        };
        let acceptor = match &self.tls {
            Some((cert, key)) => {
                let mut config = (*crate::tls::server_config(cert, key, None)?).clone();
                config.alpn_protocols = vec![b"h2".to_vec()];
                Some(TlsAcceptor::from(Arc::new(config)))
            }
            None => None,
        };
        let on_conn: ConnFn = {
            let shared = shared.clone();
            Arc::new(move |tcp: TcpStream| {
                let (shared, services, acceptor) =
                    (shared.clone(), services.clone(), acceptor.clone());
                Box::pin(async move {
                    match acceptor {
                        None => serve(tcp, shared, services).await,
                        Some(a) => {
                            if let Ok(tls) = a.accept(tcp).await {
                                serve(tls, shared, services).await;
                            }
                        }
                    }
                })
            })
        };
        Ok(GrpcUpstream {
            name,
            shared,
            health,
            listener: Listener::bind(self.addr, on_conn)?,
            tls: self.tls.is_some(),
        })
    }
}
