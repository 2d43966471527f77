//! Certificate files for the tests, made fresh in a temp dir: ECDSA pairs by rcgen, RSA
//! pairs by the real `openssl` command, and an in-memory handshake between a rustls client
//! and the server config under test.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use rcgen::{CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, ServerConfig, ServerConnection,
};

pub struct Pair {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// A CA that signs leaves.
pub struct Ca {
    pub issuer: Issuer<'static, KeyPair>,
    pub pem: String,
}

pub fn ca(name: &str) -> Ca {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, name);
    p.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let key = KeyPair::generate().unwrap();
    let cert = p.self_signed(&key).unwrap();
    Ca {
        pem: cert.pem(),
        issuer: Issuer::new(p, key),
    }
}

/// A leaf for `names` signed by `ca`, valid from `from` to `until` (years), written as
/// `NAME.pem` / `NAME.key` in `dir`; the cert file holds the leaf then `extra` PEM.
pub fn leaf(
    dir: &Path,
    file: &str,
    ca: &Ca,
    names: &[&str],
    years: (i32, i32),
    extra: &str,
) -> Pair {
    let mut p =
        CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    p.not_before = rcgen::date_time_ymd(years.0, 1, 1);
    p.not_after = rcgen::date_time_ymd(years.1, 1, 1);
    let key = KeyPair::generate().unwrap();
    let cert = p.signed_by(&key, &ca.issuer).unwrap();
    write(dir, file, &(cert.pem() + extra), &key.serialize_pem())
}

/// A leaf valid now (2000–2100).
pub fn valid(dir: &Path, file: &str, ca: &Ca, names: &[&str]) -> Pair {
    leaf(dir, file, ca, names, (2000, 2100), "")
}

pub fn write(dir: &Path, file: &str, cert: &str, key: &str) -> Pair {
    let pair = Pair {
        cert: dir.join(format!("{file}.pem")),
        key: dir.join(format!("{file}.key")),
    };
    std::fs::write(&pair.cert, cert).unwrap();
    std::fs::write(&pair.key, key).unwrap();
    pair
}

/// A self-signed RSA pair made by the openssl command, as an operator would.
pub fn openssl_rsa(dir: &Path, file: &str, name: &str) -> Pair {
    let pair = Pair {
        cert: dir.join(format!("{file}.pem")),
        key: dir.join(format!("{file}.key")),
    };
    let out = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
        ])
        .arg(format!("/CN={name}"))
        .arg("-addext")
        .arg(format!("subjectAltName=DNS:{name}"))
        .arg("-keyout")
        .arg(&pair.key)
        .arg("-out")
        .arg(&pair.cert)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    pair
}

/// Accepts any server certificate: the tests look at which one the server presented.
#[derive(Debug)]
pub struct AnyCert(pub Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyCert {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

pub fn any_cert_client() -> ClientConfig {
    let provider = weir_tls::provider::provider();
    ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCert(provider)))
        .with_no_client_auth()
}

/// Runs a handshake in memory; `sni` None connects by IP (no SNI sent).
pub fn handshake(
    server: Arc<ServerConfig>,
    client: Arc<ClientConfig>,
    sni: Option<&str>,
) -> Result<(ClientConnection, ServerConnection), rustls::Error> {
    let name = match sni {
        Some(n) => ServerName::try_from(n.to_owned()).unwrap(),
        None => ServerName::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()),
    };
    let mut c = ClientConnection::new(client, name)?;
    let mut s = ServerConnection::new(server)?;
    let mut buf = Vec::new();
    for _ in 0..20 {
        if !c.is_handshaking() && !s.is_handshaking() {
            return Ok((c, s));
        }
        buf.clear();
        while c.wants_write() {
            c.write_tls(&mut buf).unwrap();
        }
        let mut rd = &buf[..];
        while !rd.is_empty() {
            s.read_tls(&mut rd).unwrap();
        }
        s.process_new_packets()?;
        buf.clear();
        while s.wants_write() {
            s.write_tls(&mut buf).unwrap();
        }
        let mut rd = &buf[..];
        while !rd.is_empty() {
            c.read_tls(&mut rd).unwrap();
        }
        c.process_new_packets()?;
    }
    panic!("handshake did not finish");
}

/// The leaf the server presented.
pub fn presented(c: &ClientConnection) -> CertificateDer<'static> {
    c.peer_certificates().unwrap()[0].clone().into_owned()
}

/// The leaf in a PEM file.
pub fn leaf_der(path: &Path) -> CertificateDer<'static> {
    use rustls::pki_types::pem::PemObject;
    CertificateDer::pem_file_iter(path)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
}
