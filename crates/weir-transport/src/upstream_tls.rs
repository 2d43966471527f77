//! TLS to endpoints (`[pools.NAME.tls]`): a pool's rustls client settings, built once per
//! change of its tls table and shared by every connection of the pool (rustls keeps the
//! sessions to resume in the config, so one config per pool is what makes reconnects
//! resume), built again when its files change (`upstream_tls/reload.rs`), the handshake on
//! a connected socket, and why a handshake failed.

mod reload;

use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use rustls::pki_types::ServerName;
use rustls::ClientConfig;
use tokio::net::TcpStream;
use tokio::time::Sleep;
use tokio_rustls::TlsConnector;
use weir_config::{PoolTls, TlsVersion};
use weir_tls::{ClientSettings, MinVersion, SettingsError, Trust};

use crate::alpn::Alpn;
use crate::connect::ConnectError;
use crate::handshake_error::HandshakeError;

/// One TLS session to an endpoint. Boxed: a rustls connection is ~1 KiB, and plain
/// streams should not carry that size around.
pub type TlsStream = Box<tokio_rustls::client::TlsStream<TcpStream>>;

/// A pool's TLS settings, ready to connect with.
pub struct UpstreamTls {
    /// Unique per build: pooled connections and health checkers made under other
    /// settings are told apart by it (0 is a plain connection).
    pub id: u64,
    /// The pool's name, for the log.
    pool: String,
    /// What it was built from, to see whether a new config changes it.
    pub settings: PoolTls,
    /// Replaced when the files change; connections made before keep theirs.
    connectors: ArcSwap<Connectors>,
    /// `None`: each endpoint's IP address (verified as an IP SAN).
    server_name: Option<ServerName<'static>>,
    /// The files read again after they changed, and those that did not read (the
    /// connectors before them stay).
    pub reloads_ok: AtomicU64,
    pub reloads_failed: AtomicU64,
}

/// HTTP/1.1 pools offer `http/1.1` unless `alpn` says otherwise, HTTP/2 pools `h2`; a tcp
/// listener's sessions offer only what `alpn` lists. All share one session store.
struct Connectors {
    http: TlsConnector,
    h2: TlsConnector,
    tcp: TlsConnector,
}

impl fmt::Debug for UpstreamTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UpstreamTls")
            .field("id", &self.id)
            .field("settings", &self.settings)
            .finish()
    }
}

/// Why a pool's TLS settings could not be built (a CA or client certificate file that no
/// longer reads, though the config was valid when checked).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BuildError(String);

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl UpstreamTls {
    /// Reads the files `settings` (of pool `pool`) names and builds the client config, then
    /// watches the files for as long as the result is in use.
    pub fn build(pool: &str, settings: &PoolTls) -> Result<Arc<UpstreamTls>, BuildError> {
        // Stamped first: a change made while they are read is seen by the watch.
        let seen = reload::stamps(settings);
        let connectors = Connectors::build(settings)?;
        let server_name = match &settings.server_name {
            Some(n) => Some(
                ServerName::try_from(n.clone())
                    .map_err(|e| BuildError(format!("server_name {n:?}: {e}")))?,
            ),
            None => None,
        };
        let tls = Arc::new(UpstreamTls {
            id: NEXT_ID.fetch_add(1, Relaxed),
            pool: pool.to_string(),
            settings: settings.clone(),
            connectors: ArcSwap::from_pointee(connectors),
            server_name,
            reloads_ok: AtomicU64::new(0),
            reloads_failed: AtomicU64::new(0),
        });
        reload::watch(&tls, seen);
        Ok(tls)
    }

    /// The name sent as SNI and verified for an endpoint at `ip`.
    fn name_for(&self, ip: IpAddr) -> ServerName<'static> {
        match &self.server_name {
            Some(n) => n.clone(),
            None => ServerName::IpAddress(ip.into()),
        }
    }

    /// Completes the handshake on `tcp` before `timer` fires (the rest of the connect
    /// timeout: it covers the TCP connect and the handshake together).
    pub async fn handshake(
        &self,
        alpn: Alpn,
        addr: SocketAddr,
        tcp: TcpStream,
        timeout: Duration,
        timer: Pin<&mut Sleep>,
    ) -> Result<TlsStream, ConnectError> {
        let connectors = self.connectors.load();
        let connector = match alpn {
            Alpn::Http1 => &connectors.http,
            Alpn::H2 => &connectors.h2,
            Alpn::Tcp => &connectors.tcp,
        };
        let name = self.name_for(addr.ip());
        let shown = name.to_str().into_owned();
        let handshake = connector.connect(name, tcp);
        let stream = tokio::select! {
            biased;
            r = handshake => r.map(Box::new).map_err(|e| ConnectError::Tls {
                addr,
                name: shown,
                source: HandshakeError::from(e),
            })?,
            _ = timer => return Err(ConnectError::HandshakeTimeout { addr, timeout }),
        };
        // A pool's `alpn` may offer more than the protocol it speaks, but an endpoint that
        // picks another would not understand it. None picked: the endpoint does not do
        // ALPN, and is taken to speak the pool's protocol.
        let speaks: &[u8] = match alpn {
            Alpn::Http1 => b"http/1.1",
            Alpn::H2 => b"h2",
            Alpn::Tcp => return Ok(stream),
        };
        match stream.get_ref().1.alpn_protocol() {
            Some(p) if p != speaks => Err(ConnectError::Alpn {
                addr,
                chosen: String::from_utf8_lossy(p).into_owned(),
                speaks: alpn,
            }),
            _ => Ok(stream),
        }
    }
}

impl Connectors {
    /// Reads the files `settings` names and builds the client configs.
    fn build(settings: &PoolTls) -> Result<Connectors, BuildError> {
        let client = ClientSettings {
            trust: match &settings.ca {
                Some(ca) => Trust::File(ca.clone()),
                None => Trust::System,
            },
            min_version: match settings.min_version {
                TlsVersion::V12 => MinVersion::V12,
                TlsVersion::V13 => MinVersion::V13,
            },
            identity: settings.cert.clone().zip(settings.key.clone()),
            alpn: match &settings.alpn {
                Some(list) => list.iter().map(|p| p.as_bytes().to_vec()).collect(),
                None => vec![b"http/1.1".to_vec()],
            },
        };
        let http = weir_tls::client::client_config(&client).map_err(|e| BuildError(why(e)))?;
        // A clone shares the session store: one pool, one set of sessions.
        let offering = |alpn: Vec<Vec<u8>>| match settings.alpn {
            Some(_) => http.clone(),
            None => {
                let mut c = ClientConfig::clone(&http);
                c.alpn_protocols = alpn;
                Arc::new(c)
            }
        };
        let tcp = offering(Vec::new());
        let h2 = offering(vec![b"h2".to_vec()]);
        Ok(Connectors {
            http: TlsConnector::from(http),
            h2: TlsConnector::from(h2),
            tcp: TlsConnector::from(tcp),
        })
    }
}

/// Whether `e` is the backend refusing the handshake after rustls considered it done: in
/// TLS 1.3 the client finishes first, so a backend that rejects the client's certificate
/// (or wants one) says so with an alert that arrives where the first answer would.
pub fn handshake_refused(e: &io::Error) -> bool {
    use rustls::AlertDescription as A;
    let Some(rustls::Error::AlertReceived(alert)) =
        e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>())
    else {
        return false;
    };
    matches!(
        alert,
        A::CertificateRequired
            | A::BadCertificate
            | A::UnsupportedCertificate
            | A::CertificateRevoked
            | A::CertificateExpired
            | A::CertificateUnknown
            | A::UnknownCA
            | A::AccessDenied
            | A::HandshakeFailure
    )
}

/// A settings error in a pool's terms (weir-tls words its CA errors for listeners).
fn why(e: SettingsError) -> String {
    match e {
        SettingsError::Ca(e) => format!("ca: {e}"),
        SettingsError::BadCa { path, reason } => format!("ca {path}: {reason}"),
        e => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::UpstreamStream;
    use rustls::CertificateError;
    use weir_testkit::certs::Ca;
    use weir_testkit::{tls::server_config, TlsFront};

    fn settings(ca: Option<PathBuf>, name: Option<&str>) -> PoolTls {
        PoolTls {
            ca,
            server_name: name.map(str::to_owned),
            cert: None,
            key: None,
            alpn: None,
            min_version: TlsVersion::V12,
        }
    }

    #[tokio::test]
    async fn verifies_the_name_and_says_why_not() {
        let dir = tempfile_dir();
        let ca = Ca::new("ca");
        let ca_file = ca.write(&dir, "ca");
        let (cert, key) = ca.leaf_files(&dir, "api", &["api.internal"]);
        let backend = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let front = TlsFront::spawn(
            backend.local_addr().unwrap(),
            server_config(&cert, &key, None).unwrap(),
        )
        .unwrap();
        let t = Duration::from_secs(5);
        let good = UpstreamTls::build(
            "test",
            &settings(Some(ca_file.clone()), Some("api.internal")),
        )
        .unwrap();
        let s = UpstreamStream::connect(front.addr(), t, Some(&good), Alpn::Http1, None)
            .await
            .unwrap();
        assert!(matches!(s, UpstreamStream::Tls(_)));
        assert!(!s.peer_gone());

        let wrong =
            UpstreamTls::build("test", &settings(Some(ca_file), Some("other.internal"))).unwrap();
        assert_ne!(wrong.id, good.id);
        match UpstreamStream::connect(front.addr(), t, Some(&wrong), Alpn::Http1, None).await {
            Err(e @ ConnectError::Tls { .. }) => {
                let text = e.to_string();
                assert!(text.contains("(as other.internal)"), "{text}");
                assert!(text.contains("server_name"), "{text}");
            }
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("a certificate for another name verified"),
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn an_http_pool_refuses_an_endpoint_that_picks_another_protocol() {
        let dir = tempfile_dir();
        let ca = Ca::new("ca");
        let ca_file = ca.write(&dir, "ca");
        let (cert, key) = ca.leaf_files(&dir, "api", &["api.internal"]);
        let mut h2 = rustls::ServerConfig::clone(&server_config(&cert, &key, None).unwrap());
        h2.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let front = TlsFront::spawn(front_target().await, Arc::new(h2)).unwrap();
        let mut offer = settings(Some(ca_file), Some("api.internal"));
        offer.alpn = Some(vec!["h2".into(), "http/1.1".into()]);
        let tls = UpstreamTls::build("test", &offer).unwrap();
        let t = Duration::from_secs(5);
        match UpstreamStream::connect(front.addr(), t, Some(&tls), Alpn::Http1, None).await {
            Err(ConnectError::Alpn { chosen, .. }) => assert_eq!(chosen, "h2"),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("connected to an endpoint that chose h2"),
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    /// An address for a TlsFront to relay to (nothing is relayed in these tests).
    async fn front_target() -> std::net::SocketAddr {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move { while l.accept().await.is_ok() {} });
        addr
    }

    #[tokio::test]
    async fn the_connect_timeout_covers_the_handshake() {
        // Accepts, then never answers the ClientHello.
        let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = silent.local_addr().unwrap();
        let hold = tokio::spawn(async move {
            let (_s, _) = silent.accept().await.unwrap();
            std::future::pending::<()>().await;
        });
        let dir = tempfile_dir();
        let ca = Ca::new("ca").write(&dir, "ca");
        let tls = UpstreamTls::build("test", &settings(Some(ca), Some("x.internal"))).unwrap();
        // Long enough for any loopback connect: what runs out is the handshake's time.
        match UpstreamStream::connect(addr, Duration::from_secs(1), Some(&tls), Alpn::Http1, None)
            .await
        {
            Err(ConnectError::HandshakeTimeout { .. }) => {}
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("a handshake nobody answered completed"),
        }
        hold.abort();
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_ca_file_that_does_not_read_is_a_build_error_naming_it() {
        let e = UpstreamTls::build("test", &settings(Some("/nonexistent/ca.pem".into()), None))
            .unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("ca: cannot read /nonexistent/ca.pem"),
            "{text}"
        );
    }

    #[test]
    fn handshake_errors_keep_rustls_reasons_and_spot_refusals() {
        let wrapped = |e: rustls::Error| io::Error::new(io::ErrorKind::InvalidData, e);
        let e = HandshakeError::from(wrapped(rustls::Error::InvalidCertificate(
            CertificateError::UnknownIssuer,
        )));
        assert!(matches!(e, HandshakeError::Tls(_)));
        assert!(e.to_string().contains("`ca`"), "{e}");
        let eof = HandshakeError::from(io::Error::from(io::ErrorKind::UnexpectedEof));
        assert!(eof.to_string().contains("does it speak TLS"), "{eof}");

        let alert = |a| wrapped(rustls::Error::AlertReceived(a));
        assert!(handshake_refused(&alert(
            rustls::AlertDescription::CertificateRequired
        )));
        assert!(handshake_refused(&alert(
            rustls::AlertDescription::UnknownCA
        )));
        assert!(!handshake_refused(&alert(
            rustls::AlertDescription::CloseNotify
        )));
        assert!(!handshake_refused(&io::Error::from(
            io::ErrorKind::ConnectionReset
        )));
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "weir-upstream-tls-{}-{}",
            std::process::id(),
            NEXT_ID.fetch_add(1, Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
