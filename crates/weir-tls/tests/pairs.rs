//! A certificate pair is checked before it is served, each problem named with its file.

mod common;

use std::time::{Duration, SystemTime};

use common::*;
use weir_tls::{CertError, Identity};

fn load(p: &Pair) -> Result<Identity, CertError> {
    Identity::load(&p.cert, &p.key, SystemTime::now())
}

#[test]
fn a_valid_pair_loads_with_its_names() {
    let dir = tempfile::tempdir().unwrap();
    let ca = ca("test ca");
    let id = load(&valid(
        dir.path(),
        "shop",
        &ca,
        &["Shop.Example", "*.api.example"],
    ))
    .unwrap();
    assert_eq!(id.names, ["shop.example", "*.api.example"]);
    assert!(!id.expires_within(Duration::from_secs(14 * 86400), SystemTime::now()));
}

#[test]
fn an_rsa_pair_made_by_openssl_loads() {
    let dir = tempfile::tempdir().unwrap();
    let id = load(&openssl_rsa(dir.path(), "rsa", "rsa.example")).unwrap();
    assert_eq!(id.names, ["rsa.example"]);
    // Made for 2 days: within the 14-day warning.
    assert!(id.expires_within(Duration::from_secs(14 * 86400), SystemTime::now()));
}

#[test]
fn a_key_that_is_not_the_certificates_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ca = ca("test ca");
    let a = valid(dir.path(), "a", &ca, &["a.example"]);
    let b = valid(dir.path(), "b", &ca, &["b.example"]);
    let crossed = Pair {
        cert: a.cert.clone(),
        key: b.key.clone(),
    };
    let e = load(&crossed).unwrap_err();
    assert!(matches!(e, CertError::KeyMismatch { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        format!(
            "the key in {} does not match the certificate in {}",
            b.key.display(),
            a.cert.display()
        )
    );
}

#[test]
fn an_expired_or_not_yet_valid_certificate_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ca = ca("test ca");
    let old = leaf(dir.path(), "old", &ca, &["old.example"], (2000, 2001), "");
    let e = load(&old).unwrap_err();
    assert!(matches!(e, CertError::Expired { .. }), "{e}");
    assert!(
        e.to_string().contains("expired on Jan  1 00:00:00 2001"),
        "{e}"
    );
    let future = leaf(dir.path(), "future", &ca, &["f.example"], (2090, 2100), "");
    assert!(matches!(
        load(&future).unwrap_err(),
        CertError::NotYetValid { .. }
    ));
}

#[test]
fn files_that_are_not_a_pair_say_what_they_hold() {
    let dir = tempfile::tempdir().unwrap();
    let ca = ca("test ca");
    let good = valid(dir.path(), "good", &ca, &["g.example"]);
    let key_pem = std::fs::read_to_string(&good.key).unwrap();
    let cert_pem = std::fs::read_to_string(&good.cert).unwrap();

    let p = write(dir.path(), "nocert", "hello\n", &key_pem);
    assert!(matches!(load(&p).unwrap_err(), CertError::NoCertificate(_)));
    let p = write(dir.path(), "nokey", &cert_pem, &cert_pem);
    assert!(matches!(load(&p).unwrap_err(), CertError::NoKey(_)));
    let p = write(dir.path(), "cut", &cert_pem[..cert_pem.len() / 2], &key_pem);
    let e = load(&p).unwrap_err();
    assert!(matches!(e, CertError::BadPem { .. }), "{e}");
    let missing = Pair {
        cert: dir.path().join("nope.pem"),
        key: good.key.clone(),
    };
    let e = load(&missing).unwrap_err();
    assert!(
        e.to_string()
            .starts_with(&format!("cannot read {}", missing.cert.display())),
        "{e}"
    );
}

#[test]
fn an_endless_file_is_not_read_to_the_end() {
    let p = Pair {
        cert: "/dev/zero".into(),
        key: "/dev/zero".into(),
    };
    let e = load(&p).unwrap_err();
    assert!(matches!(e, CertError::TooLarge { .. }), "{e}");
}
