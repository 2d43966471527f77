//! A pool's upstream TLS: whom it trusts, its client certificate, and reading a ClientHello's
//! server name without decrypting (SNI passthrough).

mod common;

use std::sync::Arc;
use std::time::SystemTime;

use common::*;
use rustls::pki_types::ServerName;
use weir_tls::client::client_config;
use weir_tls::server::server_config;
use weir_tls::{
    ClientAuth, ClientSettings, Hello, LiveCertificates, PairSource, ServerSettings, Trust,
};

fn backend(p: &Pair, auth: ClientAuth) -> Arc<rustls::ServerConfig> {
    let s = PairSource {
        cert: p.cert.clone(),
        key: p.key.clone(),
        default: true,
        pem: None,
    };
    let certs = LiveCertificates::load(vec![s], SystemTime::now()).unwrap();
    let settings = ServerSettings {
        client_auth: auth,
        ..Default::default()
    };
    server_config(&settings, Arc::new(certs)).unwrap()
}

#[test]
fn a_ca_file_is_trusted_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let internal = ca("internal ca");
    let ca_file = dir.path().join("internal.pem");
    std::fs::write(&ca_file, &internal.pem).unwrap();
    let api = valid(dir.path(), "api", &internal, &["api.internal"]);
    let server = backend(&api, ClientAuth::None);

    let pinned = client_config(&ClientSettings {
        trust: Trust::File(ca_file),
        ..Default::default()
    })
    .unwrap();
    assert!(handshake(server.clone(), pinned.clone(), Some("api.internal")).is_ok());
    // The name is verified: the right CA but another name fails.
    let e = handshake(server.clone(), pinned, Some("other.internal")).unwrap_err();
    assert!(e.to_string().contains("certificate"), "{e}");
    // The system's roots do not know an internal CA.
    let system = client_config(&ClientSettings::default()).unwrap();
    let e = handshake(server, system, Some("api.internal")).unwrap_err();
    assert!(e.to_string().contains("UnknownIssuer"), "{e}");
}

#[test]
fn a_client_certificate_is_presented_to_a_backend_that_requires_one() {
    let dir = tempfile::tempdir().unwrap();
    let internal = ca("internal ca");
    let ca_file = dir.path().join("internal.pem");
    std::fs::write(&ca_file, &internal.pem).unwrap();
    let api = valid(dir.path(), "api", &internal, &["api.internal"]);
    let weir_id = valid(dir.path(), "weir", &internal, &["weir.internal"]);
    let server = backend(&api, ClientAuth::Required(ca_file.clone()));

    let without = client_config(&ClientSettings {
        trust: Trust::File(ca_file.clone()),
        ..Default::default()
    })
    .unwrap();
    assert!(handshake(server.clone(), without, Some("api.internal")).is_err());
    let with = client_config(&ClientSettings {
        trust: Trust::File(ca_file),
        identity: Some((weir_id.cert.clone(), weir_id.key.clone())),
        ..Default::default()
    })
    .unwrap();
    let (_, s) = handshake(server, with, Some("api.internal")).unwrap();
    assert_eq!(s.peer_certificates().unwrap()[0], leaf_der(&weir_id.cert));
}

/// The first flight a real rustls client sends for `name`.
fn client_hello(name: Option<&str>) -> Vec<u8> {
    let server_name = match name {
        Some(n) => ServerName::try_from(n.to_owned()).unwrap(),
        None => ServerName::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()),
    };
    let mut c = rustls::ClientConnection::new(Arc::new(any_cert_client()), server_name).unwrap();
    let mut out = Vec::new();
    while c.wants_write() {
        c.write_tls(&mut out).unwrap();
    }
    out
}

#[test]
fn the_server_name_is_read_from_a_client_hello_without_decrypting() {
    let hello = client_hello(Some("pg.db.internal"));
    assert_eq!(
        weir_tls::hello::peek(&hello),
        Hello::Sni("pg.db.internal".into())
    );
    assert_eq!(weir_tls::hello::peek(&client_hello(None)), Hello::NoSni);
    // Any prefix is the start of a hello: wait for more.
    for cut in [1, 5, 6, hello.len() / 2, hello.len() - 1] {
        assert_eq!(
            weir_tls::hello::peek(&hello[..cut]),
            Hello::Incomplete,
            "cut at {cut}"
        );
    }
    assert_eq!(
        weir_tls::hello::peek(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
        Hello::NotTls
    );
    assert_eq!(
        weir_tls::hello::peek(b"\x16\x03\x01\xff\xff"),
        Hello::NotTls
    );
    // A handshake record that is not a ClientHello.
    assert_eq!(
        weir_tls::hello::peek(b"\x16\x03\x03\x00\x04\x02\x00\x00\x00"),
        Hello::NotTls
    );
}

/// Fed as it arrives (a byte at a time, as a slow client sends it), the hello reads the
/// same as whole.
#[test]
fn a_client_hello_fed_in_pieces_reads_as_whole() {
    let hello = client_hello(Some("pg.db.internal"));
    let mut p = weir_tls::hello::Peeker::new();
    for b in &hello[..hello.len() - 1] {
        assert_eq!(p.feed(std::slice::from_ref(b)), Hello::Incomplete);
    }
    assert_eq!(
        p.feed(&hello[hello.len() - 1..]),
        Hello::Sni("pg.db.internal".into())
    );
    let mut p = weir_tls::hello::Peeker::new();
    assert_eq!(p.feed(b"GET / HT"), Hello::NotTls);
    // Once not TLS, always not TLS.
    assert_eq!(p.feed(&hello), Hello::NotTls);
}
