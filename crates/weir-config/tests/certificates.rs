//! `[certificates.NAME]` (the API's `certificates/NAME`): PEM text attached to a TLS
//! listener, checked from memory as it is read (so `parse_str` and the API refuse a bad pair
//! at its field), and the rules across tables: the listener has `[tls]`, every TLS listener
//! has a certificate from its files or attached ones, one default across both.

mod common;

use common::*;
use rcgen::{CertificateParams, KeyPair};
use serde_json::json;
use weir_config::{Admin, FieldProblem, Global, ResourceChange, ResourceKind, Resources, Severity};

struct Pem {
    cert: String,
    key: String,
}

fn pem(sans: &[&str], days_left: i64) -> Pem {
    let mut p =
        CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    let now = time::OffsetDateTime::now_utc();
    p.not_before = now - time::Duration::days(30);
    p.not_after = now + time::Duration::days(days_left);
    let key = KeyPair::generate().unwrap();
    let cert = p.self_signed(&key).unwrap();
    Pem {
        cert: cert.pem(),
        key: key.serialize_pem(),
    }
}

/// A TLS listener `web` without certificate files, then `[certificates.NAME]` tables.
fn file(certs: &[(&str, &str, &str, &str, bool)]) -> String {
    let mut s = format!("{BASE}[listeners.web.tls]\nmin_version = \"1.2\"\n");
    for (name, listener, cert, key, default) in certs {
        s.push_str(&format!(
            "\n[certificates.{name}]\nlistener = \"{listener}\"\ndefault = {default}\ncert_pem = '''\n{cert}'''\nkey_pem = '''\n{key}'''\n"
        ));
    }
    s
}

/// The line of the first line of `src` that starts with `prefix`, after `after` such lines.
fn line_of(src: &str, prefix: &str, after: usize) -> usize {
    src.lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with(prefix))
        .nth(after)
        .map(|(i, _)| i + 1)
        .unwrap()
}

#[test]
fn a_certificate_attaches_to_a_tls_listener_without_files() {
    let shop = pem(&["shop.example"], 300);
    let src = file(&[("shop", "web", &shop.cert, &shop.key, true)]);
    let l = ok(&src);
    assert!(l.warnings.is_empty(), "{:#?}", l.warnings);
    let c = &l.config.certificates["shop"];
    assert_eq!((c.listener.as_str(), c.default), ("web", true));
    assert_eq!(c.cert_pem, shop.cert);
    assert_eq!(c.key_pem, shop.key);
    assert!(l.config.listeners["web"]
        .tls
        .as_ref()
        .unwrap()
        .certificates
        .is_empty());
    // Printing the config never prints a key.
    assert!(!format!("{:?}", l.config).contains("PRIVATE KEY"));
}

#[test]
fn each_mistake_is_an_error_at_its_key() {
    let shop = pem(&["shop.example"], 300);
    let other = pem(&["other.example"], 300);
    let expired = pem(&["old.example"], -1);

    let src = file(&[("shop", "web", &shop.cert, &other.key, false)]);
    let errs = errors(&src);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!(errs[0].0, line_of(&src, "key_pem", 0));
    assert!(
        errs[0]
            .2
            .contains("the key in key_pem does not match the certificate in cert_pem"),
        "{}",
        errs[0].2
    );

    let src = file(&[("shop", "web", "not PEM\n", &shop.key, false)]);
    let errs = errors(&src);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!(errs[0].0, line_of(&src, "cert_pem", 0));
    assert!(
        errs[0].2.contains("cert_pem holds no certificate"),
        "{errs:?}"
    );

    let src = file(&[("shop", "web", &shop.cert, "garbage\n", false)]);
    let errs = errors(&src);
    assert_eq!(errs[0].0, line_of(&src, "key_pem", 0));
    assert!(
        errs[0].2.contains("key_pem holds no private key"),
        "{errs:?}"
    );

    let src = file(&[("old", "web", &expired.cert, &expired.key, false)]);
    let errs = errors(&src);
    assert_eq!(errs[0].0, line_of(&src, "cert_pem", 0));
    assert!(errs[0].2.contains("expired"), "{errs:?}");

    // The listener must exist and terminate TLS.
    let src = file(&[("shop", "wbe", &shop.cert, &shop.key, false)]);
    let errs = errors(&src);
    assert!(
        errs.iter()
            .any(|e| e.2.contains("no listener named `wbe`, did you mean `web`?")),
        "{errs:#?}"
    );
    let plain = format!(
        "{BASE}[certificates.shop]\nlistener = \"web\"\ncert_pem = '''\n{}'''\nkey_pem = '''\n{}'''\n",
        shop.cert, shop.key
    );
    one_error(&plain, 7, 12, "listener `web` has no [tls] table");

    // Required keys.
    let src = format!(
        "{BASE}[listeners.web.tls]\ncertificates = [{{ cert = \"a\", key = \"b\" }}]\n[certificates.shop]\nlistener = \"web\"\ncert_pem = '''\n{}'''\n",
        shop.cert
    );
    let errs = errors(&src);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert!(errs[0].2.contains("certificate `shop` has no `key_pem`"));
}

#[test]
fn a_tls_listener_needs_a_certificate_and_at_most_one_default() {
    let a = pem(&["a.example"], 300);
    let b = pem(&["b.example"], 300);
    // Neither files nor an attached certificate: at the [tls] table.
    one_error(
        &file(&[]),
        6,
        1,
        "a TLS listener needs at least one certificate",
    );
    // One default across the files and the attached certificates.
    let src = file(&[
        ("a", "web", &a.cert, &a.key, true),
        ("b", "web", &b.cert, &b.key, true),
    ]);
    let errs = errors(&src);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!(errs[0].0, line_of(&src, "default = true", 1));
    assert!(errs[0].2.contains("certificate `a` is"), "{errs:?}");
    let src = file(&[("a", "web", &a.cert, &a.key, true)]).replace(
        "min_version = \"1.2\"",
        "certificates = [{ cert = \"x\", key = \"y\", default = true }]",
    );
    let errs = errors(&src);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert!(errs[0].2.contains("certificate files have one"), "{errs:?}");
}

#[test]
fn one_expiring_soon_is_a_warning() {
    let soon = pem(&["soon.example"], 3);
    let l = ok(&file(&[("soon", "web", &soon.cert, &soon.key, true)]));
    assert_eq!(l.warnings.len(), 1, "{:#?}", l.warnings);
    assert_eq!(l.warnings[0].severity, Severity::Warning);
    assert!(
        l.warnings[0].message.contains("expires in 2 days")
            || l.warnings[0].message.contains("expires in 3 days"),
        "{}",
        l.warnings[0].message
    );
}

#[test]
fn route_coverage_counts_attached_certificates() {
    let dir = tempfile::tempdir().unwrap();
    let api = pem(&["*.api.example"], 300);
    let routes = "[routes.a]\nlistener = \"web\"\nhost = \"v1.api.example\"\npool = \"app\"\n[routes.b]\nlistener = \"web\"\nhost = \"shop.example\"\npool = \"app\"\n";
    let src = format!(
        "{}{routes}",
        file(&[("api", "web", &api.cert, &api.key, false)])
    );
    let f = dir.path().join("weir.toml");
    std::fs::write(&f, &src).unwrap();
    let l = weir_config::load_file(&f).unwrap();
    assert_eq!(l.warnings.len(), 1, "{:#?}", l.warnings);
    assert_eq!(l.warnings[0].line, line_of(&src, "host = \"shop", 0));
    assert!(l.warnings[0]
        .message
        .contains("no certificate on listener `web` covers this host"));
}

fn put<'a>(kind: ResourceKind, name: &'a str, spec: &'a serde_json::Value) -> ResourceChange<'a> {
    ResourceChange {
        kind,
        name,
        spec: Some(spec),
    }
}

fn fields(r: Result<(), Vec<FieldProblem>>) -> Vec<String> {
    r.unwrap_err()
        .into_iter()
        .map(|p| p.field.unwrap_or_default())
        .collect()
}

#[test]
fn through_the_api_each_problem_names_its_field() {
    let shop = pem(&["shop.example"], 300);
    let other = pem(&["other.example"], 300);
    let mut r = Resources::new(Admin::default(), Global::default());
    let pool = json!({});
    let web = json!({"bind": "127.0.0.1:8443", "pool": "app", "tls": {}});
    // A listener without files is refused alone...
    assert_eq!(
        fields(r.apply(&[
            put(ResourceKind::Pool, "app", &pool),
            put(ResourceKind::Listener, "web", &web),
        ])),
        ["listeners/web/tls"]
    );
    // ...and taken with a certificate in the same change.
    let cert = json!({"listener": "web", "cert_pem": shop.cert, "key_pem": shop.key});
    r.apply(&[
        put(ResourceKind::Pool, "app", &pool),
        put(ResourceKind::Listener, "web", &web),
        put(ResourceKind::Certificate, "shop", &cert),
    ])
    .unwrap();
    assert_eq!(r.config().certificates["shop"].cert_pem, shop.cert);

    for (spec, field) in [
        (
            json!({"listener": "web", "cert_pem": shop.cert, "key_pem": other.key}),
            "certificates/shop/key_pem",
        ),
        (
            json!({"listener": "web", "cert_pem": "nope", "key_pem": shop.key}),
            "certificates/shop/cert_pem",
        ),
        (
            json!({"listener": "nope", "cert_pem": shop.cert, "key_pem": shop.key}),
            // ...which leaves `web` without a certificate, too.
            "listeners/web/tls certificates/shop/listener",
        ),
        (
            json!({"listener": "web", "cert_pem": shop.cert}),
            "certificates/shop",
        ),
        (
            json!({"listener": "web", "cert_pem": shop.cert, "key_pem": shop.key, "default": 1}),
            "certificates/shop/default",
        ),
    ] {
        assert_eq!(
            fields(r.apply(&[put(ResourceKind::Certificate, "shop", &spec)])),
            field.split(' ').collect::<Vec<_>>(),
            "{}",
            spec["cert_pem"]
        );
    }
    // Refused changes left the certificate as it was.
    assert_eq!(r.config().certificates["shop"].key_pem, shop.key);
    // The listener's only certificate cannot go.
    let gone = ResourceChange {
        kind: ResourceKind::Certificate,
        name: "shop",
        spec: None,
    };
    assert_eq!(fields(r.apply(&[gone])), ["listeners/web/tls"]);
    assert!(r.config().certificates.contains_key("shop"));
}

#[test]
fn a_stored_certificate_that_expired_is_tolerated_only_when_asked() {
    let old = pem(&["old.example"], -1);
    let mut r = Resources::new(Admin::default(), Global::default());
    let pool = json!({});
    let web = json!({"bind": "127.0.0.1:8443", "pool": "app", "tls": {}});
    let cert = json!({"listener": "web", "cert_pem": old.cert, "key_pem": old.key});
    let all = [
        put(ResourceKind::Pool, "app", &pool),
        put(ResourceKind::Listener, "web", &web),
        put(ResourceKind::Certificate, "old", &cert),
    ];
    // Written now: refused.
    assert_eq!(fields(r.apply(&all)), ["certificates/old/cert_pem"]);
    // Read back from the store at a start: taken (weir starts; the warning is for `check`).
    r.tolerate_expired(true);
    r.apply(&all).unwrap();
    r.tolerate_expired(false);
    assert!(r.config().certificates.contains_key("old"));
    // Changing it again holds it to its dates.
    assert_eq!(
        fields(r.apply(&[put(ResourceKind::Certificate, "old", &cert)])),
        ["certificates/old/cert_pem"]
    );
}

#[test]
fn a_key_on_one_line_is_not_shown_in_a_diagnostic() {
    let shop = pem(&["shop.example"], 300);
    let other = pem(&["other.example"], 300);
    let one_line = |s: &str| s.replace('\n', "\\n");
    let src = format!(
        "{BASE}[listeners.web.tls]\n[certificates.shop]\nlistener = \"web\"\ncert_pem = \"{}\"\nkey_pem = \"{}\"\n",
        one_line(&shop.cert),
        one_line(&other.key)
    );
    let d = diags(&src);
    assert_eq!(d.len(), 1, "{d:#?}");
    assert!(d[0].message.contains("does not match"), "{}", d[0].message);
    let body = other.key.lines().nth(1).unwrap();
    let shown = d[0].to_string();
    assert!(
        !shown.contains(&body[..20]) && shown.contains("the key is not shown"),
        "{shown}"
    );
}
