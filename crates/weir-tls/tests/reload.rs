//! Certificates change in place: a good new pair is used for the next handshake, a bad one
//! leaves the old pair serving and says why.

mod common;

use std::sync::Arc;
use std::time::SystemTime;

use common::*;
use weir_tls::server::server_config;
use weir_tls::{CertError, LiveCertificates, PairSource, ServerSettings};

fn live(p: &Pair) -> Arc<LiveCertificates> {
    let s = PairSource {
        cert: p.cert.clone(),
        key: p.key.clone(),
        default: true,
        pem: None,
    };
    Arc::new(LiveCertificates::load(vec![s], SystemTime::now()).unwrap())
}

/// Replaces `to`'s files with `from`'s the way deploy tools do: write aside, rename over.
fn rename_over(from: &Pair, to: &Pair) {
    for (f, t) in [(&from.cert, &to.cert), (&from.key, &to.key)] {
        let tmp = t.with_extension("tmp");
        std::fs::copy(f, &tmp).unwrap();
        std::fs::rename(&tmp, t).unwrap();
    }
}

#[test]
fn a_good_new_pair_is_served_from_the_next_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let ca = ca("test ca");
    let served = valid(dir.path(), "served", &ca, &["shop.example"]);
    let next = valid(
        dir.path(),
        "next",
        &ca,
        &["shop.example", "www.shop.example"],
    );
    let certs = live(&served);
    let server = server_config(&ServerSettings::default(), certs.clone()).unwrap();
    let client = Arc::new(any_cert_client());
    let before = presented(
        &handshake(server.clone(), client.clone(), Some("shop.example"))
            .unwrap()
            .0,
    );

    rename_over(&next, &served);
    let r = certs.reload(SystemTime::now());
    assert_eq!((r.replaced.as_slice(), r.kept.len()), (&[0][..], 0));
    let after = presented(
        &handshake(server.clone(), client.clone(), Some("www.shop.example"))
            .unwrap()
            .0,
    );
    assert_ne!(before, after);
    assert_eq!(after, leaf_der(&next.cert));
    // Unchanged files: nothing replaced.
    assert!(certs.reload(SystemTime::now()).replaced.is_empty());
}

#[test]
fn a_bad_new_pair_keeps_the_old_one_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let ca = ca("test ca");
    let served = valid(dir.path(), "served", &ca, &["shop.example"]);
    let other = valid(dir.path(), "other", &ca, &["shop.example"]);
    let old = leaf(dir.path(), "old", &ca, &["shop.example"], (2000, 2001), "");
    let certs = live(&served);
    let server = server_config(&ServerSettings::default(), certs.clone()).unwrap();
    let client = Arc::new(any_cert_client());
    let original = leaf_der(&served.cert);

    // The certificate replaced but not the key yet (a deploy half done): mismatch.
    std::fs::copy(&other.cert, &served.cert).unwrap();
    let r = certs.reload(SystemTime::now());
    assert!(r.replaced.is_empty());
    assert!(
        matches!(r.kept[..], [(0, CertError::KeyMismatch { .. })]),
        "{:?}",
        r.kept
    );
    // Garbage, then an expired pair.
    std::fs::write(&served.cert, "not a certificate").unwrap();
    assert!(matches!(
        certs.reload(SystemTime::now()).kept[..],
        [(0, CertError::NoCertificate(_))]
    ));
    rename_over(&old, &served);
    assert!(matches!(
        certs.reload(SystemTime::now()).kept[..],
        [(0, CertError::Expired { .. })]
    ));
    // Still the first pair all along.
    let got = presented(&handshake(server, client, Some("shop.example")).unwrap().0);
    assert_eq!(got, original);
}

#[test]
fn a_pair_in_memory_is_served_and_never_reloaded() {
    let dir = tempfile::tempdir().unwrap();
    let ca = ca("test ca");
    let files = valid(dir.path(), "files", &ca, &["files.example"]);
    let mem = valid(dir.path(), "mem", &ca, &["mem.example"]);
    let cert = std::fs::read_to_string(&mem.cert).unwrap();
    let key = std::fs::read_to_string(&mem.key).unwrap();
    let sources = vec![
        PairSource::files(files.cert.clone(), files.key.clone(), true),
        PairSource::in_memory("certificates/mem", cert.clone(), key, false),
    ];
    let certs = Arc::new(LiveCertificates::load(sources, SystemTime::now()).unwrap());
    let server = server_config(&ServerSettings::default(), certs.clone()).unwrap();
    let client = Arc::new(any_cert_client());
    let got = handshake(server.clone(), client.clone(), Some("mem.example"))
        .unwrap()
        .0;
    assert_eq!(presented(&got), leaf_der(&mem.cert));
    // Its files going away changes nothing: it was read from memory.
    std::fs::remove_file(&mem.cert).unwrap();
    let r = certs.reload(SystemTime::now());
    assert!(r.replaced.is_empty() && r.kept.is_empty(), "{r:?}");
    // Its Debug never shows the key.
    assert!(!format!("{:?}", certs.sources()).contains("PRIVATE KEY"));
    // A key of another pair is refused, named as the resource's field.
    let other = std::fs::read_to_string(&files.key).unwrap();
    let bad = PairSource::in_memory("certificates/mem", cert, other, false);
    let e = LiveCertificates::load(vec![bad], SystemTime::now()).unwrap_err();
    assert!(
        e[0].1.to_string().contains("certificates/mem/key_pem"),
        "{}",
        e[0].1
    );
}

#[test]
fn a_pair_in_memory_is_loaded_whatever_its_dates() {
    // The config refuses an expired pair when it is written; one that expired while stored
    // is served on rather than keep a listener from starting.
    let dir = tempfile::tempdir().unwrap();
    let ca = ca("test ca");
    let old = leaf(dir.path(), "old", &ca, &["old.example"], (2000, 2001), "");
    let cert = std::fs::read_to_string(&old.cert).unwrap();
    let key = std::fs::read_to_string(&old.key).unwrap();
    let mem = PairSource::in_memory("certificates/old", cert, key, true);
    assert!(LiveCertificates::load(vec![mem], SystemTime::now()).is_ok());
    let files = PairSource::files(old.cert.clone(), old.key.clone(), true);
    assert!(matches!(
        LiveCertificates::load(vec![files], SystemTime::now()).unwrap_err()[..],
        [(0, CertError::Expired { .. })]
    ));
}
