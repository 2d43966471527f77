//! A backend that terminates TLS (rustls with weir's provider) with a certificate pair from
//! `certs`, writes `NAME\n`, then echoes until the client's EOF: what SNI passthrough and
//! TLS-terminating tcp listeners are tested against.

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use rustls::ServerConfig;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio_rustls::TlsAcceptor;

use crate::certs::Pair;
use crate::listener::{ConnFn, Listener};

/// A running TLS echo backend on 127.0.0.1.
pub struct TlsEchoUpstream {
    name: String,
    leaf: Vec<u8>,
    handshakes: Arc<AtomicU64>,
    listener: Listener,
}

impl TlsEchoUpstream {
    pub async fn spawn(name: &str, pair: &Pair) -> io::Result<TlsEchoUpstream> {
        let chain = weir_tls::pem::parse_chain(pair.cert_pem.as_bytes(), Path::new("cert"))
            .map_err(io::Error::other)?;
        let key = weir_tls::pem::parse_key(pair.key_pem.as_bytes(), Path::new("key"))
            .map_err(io::Error::other)?;
        let config = ServerConfig::builder_with_provider(weir_tls::provider::provider())
            .with_safe_default_protocol_versions()
            .map_err(io::Error::other)?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(io::Error::other)?;
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let handshakes = Arc::new(AtomicU64::new(0));
        let greeting = format!("{name}\n");
        let on_conn: ConnFn = {
            let handshakes = handshakes.clone();
            Arc::new(move |stream| {
                let (acceptor, handshakes, greeting) =
                    (acceptor.clone(), handshakes.clone(), greeting.clone());
                Box::pin(async move {
                    let Ok(tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    handshakes.fetch_add(1, Relaxed);
                    let (r, mut w) = tokio::io::split(tls);
                    if w.write_all(greeting.as_bytes()).await.is_err() {
                        return;
                    }
                    let mut r = BufReader::new(r);
                    if tokio::io::copy_buf(&mut r, &mut w).await.is_ok() {
                        let _ = w.shutdown().await;
                    }
                })
            })
        };
        Ok(TlsEchoUpstream {
            name: name.to_owned(),
            leaf: pair.der.clone(),
            handshakes,
            listener: Listener::bind(SocketAddr::from(([127, 0, 0, 1], 0)), on_conn)?,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.listener.addr()
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The leaf certificate (DER) this backend presents.
    pub fn cert(&self) -> &[u8] {
        &self.leaf
    }

    /// Handshakes completed.
    pub fn handshakes(&self) -> u64 {
        self.handshakes.load(Relaxed)
    }
}
