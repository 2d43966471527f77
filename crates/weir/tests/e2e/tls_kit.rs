//! TLS clients for the e2e tests: a rustls client (which certificate, version, ALPN and
//! resumption a handshake got) and the real `curl` and `openssl s_client`.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::process::Command;
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// A client trusting `ca_pem`, offering `alpn`, remembering sessions (so a second handshake
/// with the same config resumes), optionally with a client certificate.
pub fn client(ca_pem: &str, alpn: &[&str], identity: Option<(&str, &str)>) -> Arc<ClientConfig> {
    client_versions(ca_pem, alpn, identity, rustls::DEFAULT_VERSIONS)
}

/// [`client`] speaking only `versions`.
pub fn client_versions(
    ca_pem: &str,
    alpn: &[&str],
    identity: Option<(&str, &str)>,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for c in rustls_pemfile(ca_pem) {
        roots.add(c).unwrap();
    }
    let b = ClientConfig::builder_with_provider(weir_tls::provider::provider())
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots);
    let mut cfg = match identity {
        None => b.with_no_client_auth(),
        Some((cert, key)) => {
            let chain = rustls_pemfile(cert);
            let key =
                weir_tls::pem::parse_key(key.as_bytes(), std::path::Path::new("key")).unwrap();
            b.with_client_auth_cert(chain, key).unwrap()
        }
    };
    cfg.alpn_protocols = alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
    Arc::new(cfg)
}

fn rustls_pemfile(pem: &str) -> Vec<CertificateDer<'static>> {
    weir_tls::pem::parse_chain(pem.as_bytes(), std::path::Path::new("pem")).unwrap()
}

pub struct Handshake {
    pub stream: TlsStream<TcpStream>,
}

impl Handshake {
    /// The leaf the server presented.
    pub fn leaf(&self) -> Vec<u8> {
        self.stream.get_ref().1.peer_certificates().unwrap()[0].to_vec()
    }

    pub fn version(&self) -> &'static str {
        match self.stream.get_ref().1.protocol_version() {
            Some(rustls::ProtocolVersion::TLSv1_3) => "1.3",
            Some(rustls::ProtocolVersion::TLSv1_2) => "1.2",
            _ => "?",
        }
    }

    pub fn alpn(&self) -> Option<String> {
        self.stream
            .get_ref()
            .1
            .alpn_protocol()
            .map(|p| String::from_utf8_lossy(p).into_owned())
    }

    pub fn resumed(&self) -> bool {
        self.stream.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed)
    }

    /// `GET path` with `Connection: close`; the whole response as text.
    pub async fn get(mut self, host: &str, path: &str, extra: &str) -> String {
        let req =
            format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n");
        self.stream.write_all(req.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        // A peer that closes without close_notify is an error here; weir sends one.
        self.stream.read_to_end(&mut out).await.unwrap();
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// Connects and handshakes; `sni` `None` connects by IP (no SNI is sent).
pub async fn connect(
    cfg: &Arc<ClientConfig>,
    addr: SocketAddr,
    sni: Option<&str>,
) -> std::io::Result<Handshake> {
    let name = match sni {
        Some(n) => ServerName::try_from(n.to_string()).unwrap(),
        None => ServerName::IpAddress(addr.ip().into()),
    };
    let tcp = TcpStream::connect(addr).await?;
    let stream = TlsConnector::from(cfg.clone()).connect(name, tcp).await?;
    Ok(Handshake { stream })
}

/// `curl` with `args`, trusting `ca`, resolving `host` to `addr`: (exit ok, stdout, stderr).
pub fn curl(
    ca: &std::path::Path,
    host: &str,
    addr: SocketAddr,
    path: &str,
    args: &[&str],
) -> (bool, String, String) {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "20", "-D", "-", "--cacert"])
        .arg(ca)
        .arg("--resolve")
        .arg(format!("{host}:{}:{}", addr.port(), addr.ip()))
        .args(args)
        .arg(format!("https://{host}:{}{path}", addr.port()))
        .output()
        .expect("curl runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `openssl s_client` to `addr` with `args`, stdin closed: its whole output.
pub fn s_client(addr: SocketAddr, args: &[&str]) -> String {
    let out = Command::new("openssl")
        .args(["s_client", "-connect"])
        .arg(addr.to_string())
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("openssl runs");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The value of the metric line starting with `prefix` in weir's /metrics (0 if absent).
pub async fn metric(admin: SocketAddr, prefix: &str) -> f64 {
    let text = weir_testkit::client::get(admin, "/metrics")
        .await
        .unwrap()
        .text();
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// Waits (up to 20 s) until `metric(admin, prefix)` reaches `at_least`.
pub async fn wait_metric(admin: SocketAddr, prefix: &str, at_least: f64) -> f64 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let v = metric(admin, prefix).await;
        if v >= at_least || std::time::Instant::now() > deadline {
            return v;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
