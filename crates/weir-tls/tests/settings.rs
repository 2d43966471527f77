//! A listener's TLS settings: versions, ALPN, client certificates, resumption.

mod common;

use std::sync::Arc;
use std::time::SystemTime;

use common::*;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, HandshakeKind, ProtocolVersion};
use weir_tls::server::server_config;
use weir_tls::{ClientAuth, LiveCertificates, MinVersion, PairSource, ServerSettings};

fn server(settings: &ServerSettings, p: &Pair) -> Arc<rustls::ServerConfig> {
    let s = PairSource {
        cert: p.cert.clone(),
        key: p.key.clone(),
        default: true,
        pem: None,
    };
    let certs = LiveCertificates::load(vec![s], SystemTime::now()).unwrap();
    server_config(settings, Arc::new(certs)).unwrap()
}

fn client_with(versions: &[&'static rustls::SupportedProtocolVersion]) -> ClientConfig {
    let provider = weir_tls::provider::provider();
    ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCert(provider)))
        .with_no_client_auth()
}

#[test]
fn min_version_13_refuses_a_12_only_client_and_12_takes_both() {
    let dir = tempfile::tempdir().unwrap();
    let p = valid(dir.path(), "s", &ca("ca"), &["s.example"]);
    let only12 = Arc::new(client_with(&[&rustls::version::TLS12]));
    let s12 = server(&ServerSettings::default(), &p);
    let (c, _) = handshake(s12.clone(), only12.clone(), Some("s.example")).unwrap();
    assert_eq!(c.protocol_version(), Some(ProtocolVersion::TLSv1_2));
    let (c, _) = handshake(s12, Arc::new(any_cert_client()), Some("s.example")).unwrap();
    assert_eq!(c.protocol_version(), Some(ProtocolVersion::TLSv1_3));
    let s13 = server(
        &ServerSettings {
            min_version: MinVersion::V13,
            ..Default::default()
        },
        &p,
    );
    assert!(handshake(s13, only12, Some("s.example")).is_err());
}

#[test]
fn alpn_picks_the_servers_protocol_the_client_offers() {
    let dir = tempfile::tempdir().unwrap();
    let p = valid(dir.path(), "s", &ca("ca"), &["s.example"]);
    let settings = ServerSettings {
        alpn: vec![b"http/1.1".to_vec()],
        ..Default::default()
    };
    let s = server(&settings, &p);
    let mut c = any_cert_client();
    c.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let (c, _) = handshake(s.clone(), Arc::new(c), Some("s.example")).unwrap();
    assert_eq!(c.alpn_protocol(), Some(&b"http/1.1"[..]));
    // A client offering only what the server does not speak is refused (RFC 7301).
    let mut only_h2 = any_cert_client();
    only_h2.alpn_protocols = vec![b"h2".to_vec()];
    assert!(handshake(s, Arc::new(only_h2), Some("s.example")).is_err());
}

#[test]
fn a_second_connection_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let p = valid(dir.path(), "s", &ca("ca"), &["s.example"]);
    let s = server(&ServerSettings::default(), &p);
    for versions in [
        &[&rustls::version::TLS13][..],
        &[&rustls::version::TLS12][..],
    ] {
        // One client config keeps its session store across connections.
        let c = Arc::new(client_with(versions));
        let (first, mut sc) = handshake(s.clone(), c.clone(), Some("s.example")).unwrap();
        assert_eq!(first.handshake_kind(), Some(HandshakeKind::Full));
        // TLS 1.3 tickets arrive after the handshake: deliver them.
        let mut first = first;
        let mut buf = Vec::new();
        while sc.wants_write() {
            sc.write_tls(&mut buf).unwrap();
        }
        first.read_tls(&mut &buf[..]).unwrap();
        first.process_new_packets().unwrap();
        let (second, _) = handshake(s.clone(), c, Some("s.example")).unwrap();
        assert_eq!(
            second.handshake_kind(),
            Some(HandshakeKind::Resumed),
            "{versions:?}"
        );
    }
}

#[test]
fn client_certificates_required_or_optional() {
    let dir = tempfile::tempdir().unwrap();
    let server_ca = ca("server ca");
    let p = valid(dir.path(), "s", &server_ca, &["s.example"]);
    let clients = ca("client ca");
    let ca_file = dir.path().join("clients.pem");
    std::fs::write(&ca_file, &clients.pem).unwrap();
    let alice = valid(dir.path(), "alice", &clients, &["alice"]);
    let stranger = valid(dir.path(), "stranger", &ca("other"), &["mallory"]);

    let with_cert = |pair: &Pair| {
        let provider = weir_tls::provider::provider();
        let chain = CertificateDer::pem_file_iter(&pair.cert)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let key = PrivateKeyDer::from_pem_file(&pair.key).unwrap();
        Arc::new(
            ClientConfig::builder_with_provider(provider.clone())
                .with_safe_default_protocol_versions()
                .unwrap()
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyCert(provider)))
                .with_client_auth_cert(chain, key)
                .unwrap(),
        )
    };
    let required = server(
        &ServerSettings {
            client_auth: ClientAuth::Required(ca_file.clone()),
            ..Default::default()
        },
        &p,
    );
    let (_, sc) = handshake(required.clone(), with_cert(&alice), Some("s.example")).unwrap();
    assert_eq!(sc.peer_certificates().unwrap()[0], leaf_der(&alice.cert));
    assert!(handshake(required.clone(), with_cert(&stranger), Some("s.example")).is_err());
    assert!(handshake(required, Arc::new(any_cert_client()), Some("s.example")).is_err());

    let optional = server(
        &ServerSettings {
            client_auth: ClientAuth::Optional(ca_file),
            ..Default::default()
        },
        &p,
    );
    let (_, sc) = handshake(
        optional.clone(),
        Arc::new(any_cert_client()),
        Some("s.example"),
    )
    .unwrap();
    assert!(sc.peer_certificates().is_none());
    assert!(handshake(optional, with_cert(&stranger), Some("s.example")).is_err());
}
