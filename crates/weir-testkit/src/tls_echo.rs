//! TLS for tests: a CA made fresh per test (rcgen), a backend that terminates TLS with a
//! leaf of that CA and then echoes (after a `NAME\n` greeting), and a rustls client that
//! trusts the CA. rustls with weir's own provider does all the cryptography.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio_rustls::{client, TlsAcceptor, TlsConnector};

pub use rustls::AlertDescription;

use crate::listener::{ConnFn, Listener};

/// A certificate authority for one test.
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    der: CertificateDer<'static>,
    pem: String,
}

/// A leaf certificate and its key.
pub struct Leaf {
    pub cert: CertificateDer<'static>,
    pub cert_pem: String,
    pub key_pem: String,
    key: PrivatePkcs8KeyDer<'static>,
}

impl TestCa {
    pub fn new(name: &str) -> TestCa {
        let mut p = CertificateParams::new(Vec::<String>::new()).expect("no names");
        p.distinguished_name.push(DnType::CommonName, name);
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let key = KeyPair::generate().expect("key");
        let cert = p.self_signed(&key).expect("CA certificate");
        TestCa {
            der: cert.der().clone(),
            pem: cert.pem(),
            issuer: Issuer::new(p, key),
        }
    }

    /// The CA certificate in PEM (for `openssl s_client -CAfile`).
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// A leaf for `names` (DNS names; `*.` wildcards allowed).
    pub fn leaf(&self, names: &[&str]) -> Leaf {
        let p = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .expect("names");
        let key = KeyPair::generate().expect("key");
        let cert = p.signed_by(&key, &self.issuer).expect("leaf");
        Leaf {
            cert: cert.der().clone(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            key: PrivatePkcs8KeyDer::from(key.serialize_der()),
        }
    }

    /// A client config that trusts this CA only; `sni = false` sends no server name.
    pub fn client_config(&self, sni: bool) -> ClientConfig {
        let mut roots = RootCertStore::empty();
        roots.add(self.der.clone()).expect("CA certificate");
        let mut c = ClientConfig::builder_with_provider(weir_tls::provider::provider())
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        c.enable_sni = sni;
        c
    }

    /// Connects to `addr` over TLS, verifying the server's certificate for `name` (also
    /// sent as SNI unless `sni` is false). Returns the stream and the server's leaf.
    pub async fn connect(
        &self,
        addr: SocketAddr,
        name: &str,
        sni: bool,
    ) -> io::Result<(client::TlsStream<TcpStream>, CertificateDer<'static>)> {
        let tcp = TcpStream::connect(addr).await?;
        let name = ServerName::try_from(name.to_owned())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let stream = TlsConnector::from(Arc::new(self.client_config(sni)))
            .connect(name, tcp)
            .await?;
        let leaf = stream
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|c| c.first())
            .cloned()
            .ok_or_else(|| io::Error::other("no server certificate"))?;
        Ok((stream, leaf))
    }
}

/// The alert a failed `connect` received from the server, if that is why it failed.
pub fn received_alert(e: &io::Error) -> Option<AlertDescription> {
    match e.get_ref()?.downcast_ref::<rustls::Error>()? {
        rustls::Error::AlertReceived(a) => Some(*a),
        _ => None,
    }
}

/// The first flight a rustls client sends for `sni` (none when `None`): a complete
/// ClientHello, for tests that send it by hand (cut short, or slowly).
pub fn client_hello(sni: Option<&str>) -> Vec<u8> {
    let ca = TestCa::new("unused");
    let config = Arc::new(ca.client_config(sni.is_some()));
    let name = ServerName::try_from(sni.unwrap_or("no-sni.invalid").to_owned()).expect("name");
    let mut c = rustls::ClientConnection::new(config, name).expect("client");
    let mut out = Vec::new();
    while c.wants_write() {
        c.write_tls(&mut out).expect("write to a Vec");
    }
    out
}

/// A TLS backend on 127.0.0.1: completes the handshake with its leaf, writes `NAME\n`,
/// then echoes until the client's EOF.
pub struct TlsEchoUpstream {
    name: String,
    leaf: CertificateDer<'static>,
    handshakes: Arc<AtomicU64>,
    listener: Listener,
}

impl TlsEchoUpstream {
    pub async fn spawn(name: &str, leaf: &Leaf) -> io::Result<TlsEchoUpstream> {
        let key = PrivateKeyDer::Pkcs8(leaf.key.clone_key());
        let config = ServerConfig::builder_with_provider(weir_tls::provider::provider())
            .with_safe_default_protocol_versions()
            .map_err(io::Error::other)?
            .with_no_client_auth()
            .with_single_cert(vec![leaf.cert.clone()], key)
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
            leaf: leaf.cert.clone(),
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

    /// The certificate this backend presents.
    pub fn cert(&self) -> &CertificateDer<'static> {
        &self.leaf
    }

    /// Handshakes completed.
    pub fn handshakes(&self) -> u64 {
        self.handshakes.load(Relaxed)
    }
}
