//! TLS for the fake backends (certificates come from [`crate::certs`]): [`TlsFront`] terminates TLS (rustls) in front of
//! any backend address, one backend connection per TLS connection, counting what a test
//! asks about: handshakes, resumed sessions, client certificates, SNI, ALPN, failures.

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{HandshakeKind, RootCertStore, ServerConfig};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;

use crate::listener::{ConnFn, Listener};

/// A rustls server config presenting `cert`/`key`, offering `http/1.1` by ALPN, and with
/// `client_ca`, refusing clients without a certificate that CA signed. Resumption is
/// rustls's default (a session cache; TLS 1.3 tickets kept in it).
pub fn server_config(
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
) -> io::Result<Arc<ServerConfig>> {
    let bad = |e: &dyn std::fmt::Display| io::Error::new(io::ErrorKind::InvalidData, e.to_string());
    let chain = CertificateDer::pem_slice_iter(&std::fs::read(cert)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(&e))?;
    let key = PrivateKeyDer::from_pem_slice(&std::fs::read(key)?).map_err(|e| bad(&e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(&e))?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            for c in CertificateDer::pem_slice_iter(&std::fs::read(ca)?) {
                roots.add(c.map_err(|e| bad(&e))?).map_err(|e| bad(&e))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| bad(&e))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(chain, key).map_err(|e| bad(&e))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[derive(Default)]
struct Stats {
    handshakes: AtomicU64,
    resumed: AtomicU64,
    client_certs: AtomicU64,
    failed: AtomicU64,
    /// Per handshake: the SNI and the ALPN protocol agreed.
    seen: Mutex<Vec<(Option<String>, Option<String>)>>,
    errors: Mutex<Vec<String>>,
}

/// TLS in front of a backend: each accepted connection's handshake, then its bytes both
/// ways to a new connection to `target`. Dropping it stops it.
pub struct TlsFront {
    listener: Listener,
    stats: Arc<Stats>,
}

impl TlsFront {
    /// Listens on 127.0.0.1 (any port) with `config`, relaying to `target`.
    pub fn spawn(target: SocketAddr, config: Arc<ServerConfig>) -> io::Result<TlsFront> {
        Self::spawn_on(SocketAddr::from(([127, 0, 0, 1], 0)), target, config)
    }

    pub fn spawn_on(
        addr: SocketAddr,
        target: SocketAddr,
        config: Arc<ServerConfig>,
    ) -> io::Result<TlsFront> {
        let stats = Arc::new(Stats::default());
        let acceptor = TlsAcceptor::from(config);
        let s = stats.clone();
        let on_conn: ConnFn = Arc::new(move |tcp: TcpStream| {
            let (acceptor, stats) = (acceptor.clone(), s.clone());
            Box::pin(serve(tcp, acceptor, target, stats))
        });
        Ok(TlsFront {
            listener: Listener::bind(addr, on_conn)?,
            stats,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.listener.addr()
    }

    /// Completed handshakes.
    pub fn handshakes(&self) -> u64 {
        self.stats.handshakes.load(Relaxed)
    }

    /// Completed handshakes that resumed an earlier session.
    pub fn resumed(&self) -> u64 {
        self.stats.resumed.load(Relaxed)
    }

    /// Completed handshakes in which the client presented a certificate.
    pub fn client_certs(&self) -> u64 {
        self.stats.client_certs.load(Relaxed)
    }

    /// Handshakes that failed, and why (as rustls said).
    pub fn failed(&self) -> u64 {
        self.stats.failed.load(Relaxed)
    }

    pub fn errors(&self) -> Vec<String> {
        self.stats.errors.lock().unwrap().clone()
    }

    /// Per completed handshake: the SNI sent and the ALPN protocol agreed.
    pub fn seen(&self) -> Vec<(Option<String>, Option<String>)> {
        self.stats.seen.lock().unwrap().clone()
    }

    /// Closes the listener and every connection (a backend going down).
    pub async fn stop(&self) {
        self.listener.stop().await;
    }

    pub fn start(&self) -> io::Result<()> {
        self.listener.start()
    }
}

async fn serve(tcp: TcpStream, acceptor: TlsAcceptor, target: SocketAddr, stats: Arc<Stats>) {
    let mut tls = match acceptor.accept(tcp).await {
        Ok(t) => t,
        Err(e) => {
            stats.failed.fetch_add(1, Relaxed);
            stats.errors.lock().unwrap().push(e.to_string());
            return;
        }
    };
    {
        let c = tls.get_ref().1;
        if c.handshake_kind() == Some(HandshakeKind::Resumed) {
            stats.resumed.fetch_add(1, Relaxed);
        }
        if c.peer_certificates().is_some_and(|p| !p.is_empty()) {
            stats.client_certs.fetch_add(1, Relaxed);
        }
        let alpn = c
            .alpn_protocol()
            .map(|p| String::from_utf8_lossy(p).into_owned());
        stats
            .seen
            .lock()
            .unwrap()
            .push((c.server_name().map(str::to_owned), alpn));
        stats.handshakes.fetch_add(1, Relaxed);
    }
    let Ok(mut backend) = TcpStream::connect(target).await else {
        return;
    };
    let _ = backend.set_nodelay(true);
    let _ = tokio::io::copy_bidirectional(&mut tls, &mut backend).await;
}
