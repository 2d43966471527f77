//! Which certificate a client gets for the name it sent, through real in-memory handshakes.

mod common;

use std::sync::Arc;
use std::time::SystemTime;

use common::*;
use weir_tls::server::server_config;
use weir_tls::{Identity, LiveCertificates, PairSource, Resolver, ServerSettings};

fn source(p: &Pair, default: bool) -> PairSource {
    PairSource {
        cert: p.cert.clone(),
        key: p.key.clone(),
        default,
        pem: None,
    }
}

#[test]
fn exact_then_wildcard_then_default() {
    let dir = tempfile::tempdir().unwrap();
    let ca = ca("test ca");
    let shop = valid(dir.path(), "shop", &ca, &["shop.example"]);
    let wild = valid(dir.path(), "wild", &ca, &["*.api.example"]);
    let exact_api = valid(dir.path(), "one", &ca, &["one.api.example"]);
    let certs = LiveCertificates::load(
        vec![
            source(&shop, true),
            source(&wild, false),
            source(&exact_api, false),
        ],
        SystemTime::now(),
    )
    .unwrap();
    let server = server_config(&ServerSettings::default(), Arc::new(certs)).unwrap();
    let client = Arc::new(any_cert_client());
    let got =
        |sni: Option<&str>| presented(&handshake(server.clone(), client.clone(), sni).unwrap().0);

    assert_eq!(got(Some("shop.example")), leaf_der(&shop.cert));
    assert_eq!(got(Some("x.api.example")), leaf_der(&wild.cert));
    // An exact name wins over a wildcard that also covers it.
    assert_eq!(got(Some("one.api.example")), leaf_der(&exact_api.cert));
    // A wildcard covers one label: not the parent, not two labels deep.
    assert_eq!(got(Some("api.example")), leaf_der(&shop.cert));
    assert_eq!(got(Some("a.b.api.example")), leaf_der(&shop.cert));
    // No SNI (a client connecting by address): the default.
    assert_eq!(got(None), leaf_der(&shop.cert));
}

#[test]
fn without_a_default_an_unknown_name_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ca = ca("test ca");
    let shop = valid(dir.path(), "shop", &ca, &["shop.example"]);
    let certs = LiveCertificates::load(vec![source(&shop, false)], SystemTime::now()).unwrap();
    let server = server_config(&ServerSettings::default(), Arc::new(certs)).unwrap();
    let client = Arc::new(any_cert_client());
    assert!(handshake(server.clone(), client.clone(), Some("shop.example")).is_ok());
    let e = handshake(server.clone(), client.clone(), Some("other.example")).unwrap_err();
    assert!(e.to_string().contains("no server certificate"), "{e}");
    assert!(handshake(server, client, None).is_err());
}

#[test]
fn names_match_without_regard_to_case_or_a_final_dot() {
    let dir = tempfile::tempdir().unwrap();
    let ca = ca("test ca");
    let shop = valid(dir.path(), "shop", &ca, &["shop.example", "*.w.example"]);
    let id = Identity::load(&shop.cert, &shop.key, SystemTime::now()).unwrap();
    let r = Resolver::new([(&id, false)]);
    assert!(r.pick(Some("SHOP.Example")).is_some());
    assert!(r.pick(Some("shop.example.")).is_some());
    assert!(r.pick(Some("A.W.EXAMPLE")).is_some());
    assert!(r.pick(Some("example")).is_none());
}

#[test]
fn covers_says_which_route_hosts_have_a_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let ca = ca("test ca");
    let p = valid(dir.path(), "p", &ca, &["shop.example", "*.api.example"]);
    let id = Identity::load(&p.cert, &p.key, SystemTime::now()).unwrap();
    // The default does not count: it answers, but with a name the client will not accept.
    let r = Resolver::new([(&id, true)]);
    assert!(r.covers("shop.example"));
    assert!(r.covers("v1.api.example"));
    assert!(r.covers("*.api.example"));
    assert!(!r.covers("api.example"));
    assert!(!r.covers("*.example"));
    assert!(!r.covers("blog.example"));
}

#[test]
fn the_chain_goes_out_whole_so_a_client_trusting_only_the_root_verifies_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = ca("root");
    // An intermediate signed by the root, and a leaf signed by the intermediate.
    let mut ip = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ip.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ip.distinguished_name
        .push(rcgen::DnType::CommonName, "intermediate");
    let ikey = rcgen::KeyPair::generate().unwrap();
    let icert = ip.signed_by(&ikey, &root.issuer).unwrap();
    let inter = Ca {
        pem: icert.pem(),
        issuer: rcgen::Issuer::new(ip, ikey),
    };
    let leaf = leaf(
        dir.path(),
        "leaf",
        &inter,
        &["deep.example"],
        (2000, 2100),
        &inter.pem,
    );

    let certs = LiveCertificates::load(vec![source(&leaf, true)], SystemTime::now()).unwrap();
    let server = server_config(&ServerSettings::default(), Arc::new(certs)).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    let root_der = rustls::pki_types::pem::PemObject::from_pem_slice(root.pem.as_bytes()).unwrap();
    roots.add(root_der).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(weir_tls::provider::provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let (c, _) = handshake(server, Arc::new(client), Some("deep.example")).unwrap();
    assert_eq!(c.peer_certificates().unwrap().len(), 2);
}
