//! `[listeners.NAME.tls]`, `[pools.NAME.tls]`, SNI routes, https_redirect and hsts: the
//! model they give, each mistake at its key, and what `load_file` reads from the files
//! (key mismatch, unreadable, expired: errors; expiring soon and uncovered hosts: warnings).

mod common;
use std::path::Path;

use common::*;
use rcgen::{CertificateParams, KeyPair};
use weir_config::{ClientAuth, HostMatch, LoadError, Severity, TlsVersion};

const TLS: &str = r#"[listeners.web]
bind = "127.0.0.1:8443"
pool = "app"
[listeners.web.tls]
certificates = [ { cert = "certs/shop.pem", key = "certs/shop.key", default = true },
                 { cert = "certs/wild-api.pem", key = "certs/wild-api.key" } ]
min_version = "1.3"
client_auth = "optional"
client_ca = "certs/clients.pem"
client_identity_header = "X-Client-Subject"
handshake_timeout = "3s"

[listeners.edge]
protocol = "tcp"
bind = "127.0.0.1:9443"
sni_routing = true
pool = "app"
[routes.db]
listener = "edge"
sni = "*.db.internal"
pool = "app"

[routes.plain]
listener = "web"
host = "shop.example"
pool = "app"
hsts = "max-age=31536000; includeSubDomains"

[pools.app]
endpoints = [{ addr = "127.0.0.1:9001" }]
[pools.app.tls]
ca = "certs/internal-ca.pem"
server_name = "api.internal"
alpn = ["http/1.1"]
"#;

#[test]
fn every_tls_key_of_listeners_and_pools_parses_into_the_model() {
    let c = ok(TLS).config;
    let web = c.listeners["web"].tls.as_ref().unwrap();
    assert_eq!(web.certificates.len(), 2);
    assert!(web.certificates[0].default && !web.certificates[1].default);
    assert_eq!(web.certificates[1].key, Path::new("certs/wild-api.key"));
    assert_eq!(web.min_version, TlsVersion::V13);
    assert_eq!(web.client_auth, ClientAuth::Optional);
    assert_eq!(
        web.client_identity_header.as_deref(),
        Some("x-client-subject")
    );
    assert_eq!(web.handshake_timeout, std::time::Duration::from_secs(3));
    assert!(c.listeners["edge"].sni_routing);
    assert_eq!(
        c.routes["db"].sni,
        Some(HostMatch::Suffix(".db.internal".into()))
    );
    assert_eq!(
        c.routes["plain"].hsts.as_deref(),
        Some("max-age=31536000; includeSubDomains")
    );
    let up = c.pools["app"].tls.as_ref().unwrap();
    assert_eq!(up.server_name.as_deref(), Some("api.internal"));
    assert_eq!(up.alpn.as_deref(), Some(&["http/1.1".to_string()][..]));
    // Defaults.
    let c = ok(&format!(
        "{BASE}[listeners.web.tls]\ncertificates = [{{ cert = \"a\", key = \"b\" }}]\n"
    ))
    .config;
    let t = c.listeners["web"].tls.as_ref().unwrap();
    assert_eq!(
        (t.min_version, t.client_auth),
        (TlsVersion::V12, ClientAuth::None)
    );
    assert_eq!(t.handshake_timeout, std::time::Duration::from_secs(10));
}

#[test]
fn each_mistake_is_named_at_its_key() {
    let tls = |body: &str| format!("{BASE}[listeners.web.tls]\n{body}");
    one_error(
        &tls("min_version = \"1.2\"\n"),
        6,
        1,
        "at least one certificate",
    );
    one_error(
        &tls("certificates = []\n"),
        7,
        16,
        "at least one certificate",
    );
    one_error(
        &tls("certificates = [{ cert = \"a\", key = \"b\", default = true }, { cert = \"c\", key = \"d\", default = true }]\n"),
        7,
        95,
        "only one certificate can be the default",
    );
    one_error(
        &tls("certificates = [{ cert = \"a\" }]\n"),
        7,
        17,
        "certificate has no `key`",
    );
    one_error(
        &tls("certificates = [{ cert = \"a\", key = \"b\" }]\nmin_version = \"1.1\"\n"),
        8,
        15,
        "invalid min_version \"1.1\"",
    );
    one_error(
        &tls("certificates = [{ cert = \"a\", key = \"b\" }]\nclient_auth = \"required\"\n"),
        8,
        15,
        "client_auth needs client_ca",
    );
    one_error(
        &tls("certificates = [{ cert = \"a\", key = \"b\" }]\nclient_identity_header = \"bad header\"\n"),
        8,
        26,
        "invalid header name",
    );
    one_error(
        &tls(
            "certificates = [{ cert = \"a\", key = \"b\" }]\nclient_cert_header = \"bad header\"\n",
        ),
        8,
        22,
        "invalid header name",
    );
    one_error(
        &tls("certificates = [{ cert = \"a\", key = \"b\" }]\nclient_auth = \"optional\"\nclient_ca = \"ca.pem\"\nclient_identity_header = \"X-Client\"\nclient_cert_header = \"x-client\"\n"),
        11,
        22,
        "name the same header",
    );
    one_error(
        &format!("{BASE}[listeners.x]\nbind = \"127.0.0.1:8081\"\nsni_routing = true\n"),
        8,
        15,
        "sni_routing is for tcp listeners",
    );
    one_error(
        &format!("{BASE}[routes.r]\nlistener = \"web\"\npool = \"app\"\nhsts = \"1 year\"\n"),
        9,
        8,
        "must start with max-age=",
    );
    one_error(
        &format!("{BASE}[routes.r]\nlistener = \"web\"\npool = \"app\"\nsni = \"a.example\"\n"),
        9,
        7,
        "listener `web` is http",
    );
    one_error(
        &format!("{BASE}[pools.app.tls]\ncert = \"c.pem\"\n"),
        7,
        8,
        "has a client `cert` but no `key`",
    );
    one_error(
        &format!("{BASE}[pools.app.tls]\nserver_name = \"*.internal\"\n"),
        7,
        15,
        "a wildcard cannot be sent as SNI",
    );
}

#[test]
fn sni_routing_rules() {
    let edge =
        "[listeners.edge]\nprotocol = \"tcp\"\nbind = \"127.0.0.1:9443\"\nsni_routing = true\n";
    // pool is optional with sni_routing (unmatched connections are refused).
    ok(&format!("{BASE}{edge}"));
    one_error(
        &format!(
            "{BASE}{edge}[listeners.edge.tls]\ncertificates = [{{ cert = \"a\", key = \"b\" }}]\n"
        ),
        9,
        15,
        "cannot be combined with [tls]",
    );
    one_error(
        &format!("{BASE}{edge}[routes.r]\nlistener = \"edge\"\npool = \"app\"\n"),
        11,
        12,
        "routes by SNI; add e.g. sni =",
    );
    one_error(
        &format!("{BASE}{edge}[routes.r]\nlistener = \"edge\"\npool = \"app\"\nsni = \"a.example\"\nhost = \"a.example\"\n"),
        14,
        8,
        "host is for http routes",
    );
    one_error(
        &format!("{BASE}{edge}[routes.r]\nlistener = \"edge\"\npool = \"app\"\nsni = \"a.example\"\n[routes.s]\nlistener = \"edge\"\npool = \"app\"\nsni = \"a.example\"\n"),
        14,
        9,
        "same listener, and sni as route `r`",
    );
    // A tcp pool rule applies to the pools SNI routes send to.
    one_error(
        &format!("{BASE}{edge}[routes.r]\nlistener = \"edge\"\npool = \"e\"\nsni = \"a.example\"\n[pools.e]\nbalance = \"ewma\"\nendpoints = [{{ addr = \"127.0.0.1:9\" }}]\n"),
        12,
        8,
        "tcp listeners do not support",
    );
}

/// A pool with tls behind SNI passthrough would wrap the client's TLS in a second session.
#[test]
fn a_tls_pool_behind_sni_passthrough_warns() {
    let edge = "[listeners.edge]\nprotocol = \"tcp\"\nbind = \"127.0.0.1:9443\"\nsni_routing = true\npool = \"up\"\n";
    let route = "[routes.r]\nlistener = \"edge\"\npool = \"up\"\nsni = \"a.example\"\n";
    let pool = "[pools.up]\nendpoints = [{ addr = \"127.0.0.1:9\" }]\n[pools.up.tls]\nserver_name = \"a.example\"\n";
    let l = ok(&format!("{BASE}{edge}{route}{pool}"));
    assert_eq!(l.warnings.len(), 2, "{:#?}", l.warnings);
    assert!(l
        .warnings
        .iter()
        .all(|w| w.message.contains("would wrap it in a second TLS session")));
    // Without the pool's tls table: nothing to say.
    let plain = "[pools.up]\nendpoints = [{ addr = \"127.0.0.1:9\" }]\n";
    assert!(ok(&format!("{BASE}{edge}{route}{plain}"))
        .warnings
        .is_empty());
}

#[test]
fn redirect_and_hsts_warn_where_they_do_nothing() {
    let tls = "[listeners.web.tls]\ncertificates = [{ cert = \"a\", key = \"b\" }]\n";
    let l = ok(&format!(
        "{BASE}{tls}[routes.r]\nlistener = \"web\"\npool = \"app\"\nhttps_redirect = true\n"
    ));
    assert_eq!(l.warnings.len(), 1, "{:#?}", l.warnings);
    assert!(l.warnings[0].message.contains("already serves https"));
    let l = ok(&format!(
        "{BASE}[routes.r]\nlistener = \"web\"\npool = \"app\"\nhsts = \"max-age=60\"\n"
    ));
    assert!(l.warnings[0].message.contains("browsers ignore hsts"));
    // On a plain listener with https_redirect both are what an operator means.
    let l = ok(&format!(
        "{BASE}[routes.r]\nlistener = \"web\"\npool = \"app\"\nhsts = \"max-age=60\"\nhttps_redirect = true\n"
    ));
    assert!(l.warnings.is_empty(), "{:#?}", l.warnings);
    assert!(l.config.routes["r"].https_redirect);
}

// ---------------------------------------------------------------- files

fn pair(dir: &Path, name: &str, sans: &[&str], until: time::OffsetDateTime) -> (String, String) {
    let mut p =
        CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    p.not_before = time::OffsetDateTime::now_utc() - time::Duration::days(30);
    p.not_after = until;
    let key = KeyPair::generate().unwrap();
    let cert = p.self_signed(&key).unwrap();
    let (c, k) = (
        dir.join(format!("{name}.pem")),
        dir.join(format!("{name}.key")),
    );
    std::fs::write(&c, cert.pem()).unwrap();
    std::fs::write(&k, key.serialize_pem()).unwrap();
    (c.display().to_string(), k.display().to_string())
}

fn load(dir: &Path, src: &str) -> Result<weir_config::Loaded, weir_config::Diagnostics> {
    let f = dir.join("weir.toml");
    std::fs::write(&f, src).unwrap();
    match weir_config::load_file(&f) {
        Ok(l) => Ok(l),
        Err(LoadError::Invalid(d)) => Err(d),
        Err(e) => panic!("{e}"),
    }
}

fn listener(certs: &[(&str, &str, bool)], routes: &str) -> String {
    let list: Vec<String> = certs
        .iter()
        .map(|(c, k, d)| format!("{{ cert = \"{c}\", key = \"{k}\", default = {d} }}"))
        .collect();
    format!(
        "{BASE}[listeners.web.tls]\ncertificates = [{}]\n{routes}",
        list.join(", ")
    )
}

#[test]
fn check_reads_the_certificate_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let far = time::OffsetDateTime::now_utc() + time::Duration::days(400);
    let (shop_c, shop_k) = pair(d, "shop", &["shop.example"], far);
    let (_, other_k) = pair(d, "other", &["other.example"], far);
    let (old_c, old_k) = pair(
        d,
        "old",
        &["old.example"],
        time::OffsetDateTime::now_utc() - time::Duration::days(1),
    );
    let (soon_c, soon_k) = pair(
        d,
        "soon",
        &["soon.example"],
        time::OffsetDateTime::now_utc() + time::Duration::days(3),
    );

    // Good pair: loads, no warnings.
    let l = load(d, &listener(&[(&shop_c, &shop_k, true)], "")).unwrap();
    assert!(l.warnings.is_empty(), "{:#?}", l.warnings);

    // Mismatched key: at the key, line 7.
    let e = load(d, &listener(&[(&shop_c, &other_k, true)], "")).unwrap_err();
    let err = e.errors().next().unwrap();
    assert!(err.message.contains("does not match"), "{err}");
    assert_eq!(err.line, 7);
    let key_col = err.source_line.find(&format!("\"{other_k}\"")).unwrap() + 1;
    assert_eq!(err.col, key_col, "{err}");

    // Unreadable and expired: errors at the cert.
    let e = load(d, &listener(&[("/nonexistent/x.pem", &shop_k, true)], "")).unwrap_err();
    assert!(e
        .errors()
        .next()
        .unwrap()
        .message
        .contains("cannot read /nonexistent/x.pem"));
    let e = load(d, &listener(&[(&old_c, &old_k, true)], "")).unwrap_err();
    assert!(
        e.errors().next().unwrap().message.contains("expired"),
        "{e}"
    );

    // Expiring within 14 days: a warning.
    let l = load(d, &listener(&[(&soon_c, &soon_k, true)], "")).unwrap();
    assert_eq!(l.warnings.len(), 1);
    assert_eq!(l.warnings[0].severity, Severity::Warning);
    assert!(
        l.warnings[0].message.contains("expires in 2 days")
            || l.warnings[0].message.contains("expires in 3 days"),
        "{}",
        l.warnings[0].message
    );

    // A route host no certificate covers, with no default: a warning at the host.
    let routes = "[routes.a]\nlistener = \"web\"\nhost = \"shop.example\"\npool = \"app\"\n[routes.b]\nlistener = \"web\"\nhost = \"api.example\"\npool = \"app\"\n";
    let l = load(d, &listener(&[(&shop_c, &shop_k, false)], routes)).unwrap();
    assert_eq!(l.warnings.len(), 1, "{:#?}", l.warnings);
    assert_eq!(l.warnings[0].line, 14);
    assert!(l.warnings[0]
        .message
        .contains("no certificate on listener `web` covers this host"));
    // With a default certificate, every host gets one.
    let l = load(d, &listener(&[(&shop_c, &shop_k, true)], routes)).unwrap();
    assert!(l.warnings.is_empty());

    // parse_str reads no files (the API validates the typed model; weir run reads them).
    parse_ok_without_files(&listener(
        &[("/nonexistent/x.pem", "/nonexistent/x.key", true)],
        "",
    ));
}

fn parse_ok_without_files(src: &str) {
    ok(src);
}
