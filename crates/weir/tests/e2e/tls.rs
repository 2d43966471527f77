//! TLS termination on http listeners, through the real binary with real clients (curl,
//! openssl s_client, a rustls client): SNI choice, the default certificate and the
//! refusal without one, TLS versions, ALPN, client certificates and the identity header,
//! resumption, certificate reload (good, bad, symlink swap), https_redirect and hsts, and
//! what weir tells the backend (X-Forwarded-Proto, Forwarded).

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use weir_testkit::certs::{Ca, Pair};
use weir_testkit::HttpUpstream;

use crate::common::{free_addr, Weir};
use crate::tls_kit::{client, client_versions, connect, curl, metric, s_client, wait_metric};

struct Setup {
    ca: Ca,
    ca_path: std::path::PathBuf,
    dir: tempfile::TempDir,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("weir test CA");
    let ca_path = ca.write(dir.path(), "ca");
    Setup { ca, ca_path, dir }
}

fn pair_toml(p: &Pair, default: bool) -> String {
    format!(
        "{{ cert = \"{}\", key = \"{}\", default = {default} }}",
        p.cert.display(),
        p.key.display()
    )
}

fn tls_config(
    listen: SocketAddr,
    up: SocketAddr,
    certs: &[String],
    tls_extra: &str,
    extra: &str,
) -> String {
    format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "app"
[listeners.web.tls]
certificates = [{}]
{tls_extra}

[pools.app]
endpoints = [{{ addr = "{up}" }}]
{extra}
"#,
        certs.join(", ")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sni_picks_the_certificate_and_the_default_answers_the_rest() {
    let s = setup();
    let shop =
        s.ca.leaf(&["shop.test", "127.0.0.1"])
            .write(s.dir.path(), "shop");
    let api = s.ca.leaf(&["*.api.test"]).write(s.dir.path(), "api");
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let w = Weir::start(
        &tls_config(
            listen,
            up.addr(),
            &[pair_toml(&shop, true), pair_toml(&api, false)],
            "",
            "",
        ),
        &[listen],
    );
    let cfg = client(&s.ca.pem, &["http/1.1"], None);

    let h = connect(&cfg, listen, Some("v1.api.test")).await.unwrap();
    assert_eq!(
        h.leaf(),
        api.der,
        "the wildcard certificate answers v1.api.test"
    );
    assert_eq!(h.alpn().as_deref(), Some("http/1.1"));
    let resp = h.get("v1.api.test", "/headers", "").await;
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    // What the backend is told about the client's connection.
    assert!(resp.contains(r#"["x-forwarded-proto","https"]"#), "{resp}");
    assert!(
        resp.contains(r#"["forwarded","for=127.0.0.1;proto=https"]"#),
        "{resp}"
    );

    let h = connect(&cfg, listen, Some("shop.test")).await.unwrap();
    assert_eq!(h.leaf(), shop.der);
    // One label deeper than the wildcard: the default (which does not name it, so a
    // verifying client refuses it).
    assert!(connect(&cfg, listen, Some("a.v1.api.test")).await.is_err());
    // No SNI at all (by IP): the default, which names 127.0.0.1.
    let h = connect(&cfg, listen, None).await.unwrap();
    assert_eq!(h.leaf(), shop.der);

    // A real client: curl verifying against the CA.
    let (ok, out, err) = curl(&s.ca_path, "v2.api.test", listen, "/", &[]);
    assert!(ok, "{err}");
    // ALPN: curl offers h2 first, and weir speaks it.
    assert!(out.starts_with("HTTP/2 200"), "{out}");
    assert!(
        wait_metric(
            w.admin,
            "weir_tls_handshakes_total{listener=\"web\",version=\"1.3\",result=\"ok\"}",
            4.0
        )
        .await
            >= 4.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_default_an_unknown_name_is_refused_with_unrecognized_name() {
    let s = setup();
    let shop = s.ca.leaf(&["shop.test"]).write(s.dir.path(), "shop");
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let w = Weir::start(
        &tls_config(listen, up.addr(), &[pair_toml(&shop, false)], "", ""),
        &[listen],
    );
    let out = s_client(listen, &["-servername", "other.test"]);
    assert!(out.contains("unrecognized name"), "{out}");
    let out = s_client(listen, &["-noservername"]);
    assert!(out.contains("unrecognized name"), "{out}");
    assert_eq!(
        wait_metric(w.admin, "weir_tls_handshakes_total{listener=\"web\",version=\"\",result=\"no_certificate_for_sni\"}", 2.0).await,
        2.0
    );
    // The name it has still works.
    let (ok, _, err) = curl(&s.ca_path, "shop.test", listen, "/", &[]);
    assert!(ok, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn min_version_and_alpn() {
    let s = setup();
    let shop = s.ca.leaf(&["shop.test"]).write(s.dir.path(), "shop");
    let up = HttpUpstream::spawn("a").await.unwrap();
    let (v12, v13) = (free_addr(), free_addr());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let cfg = format!(
        r#"
[listeners.v12]
bind = "{v12}"
pool = "app"
access_log = "{}"
[listeners.v12.tls]
certificates = [{}]
[listeners.v13]
bind = "{v13}"
pool = "app"
[listeners.v13.tls]
certificates = [{}]
min_version = "1.3"
[pools.app]
endpoints = [{{ addr = "{}" }}]
"#,
        log.display(),
        pair_toml(&shop, true),
        pair_toml(&shop, true),
        up.addr()
    );
    let w = Weir::start(&cfg, &[v12, v13]);
    // TLS 1.2 where allowed, logged as such.
    let (ok, _, err) = curl(&s.ca_path, "shop.test", v12, "/", &["--tls-max", "1.2"]);
    assert!(ok, "{err}");
    let (ok, _, err) = curl(&s.ca_path, "shop.test", v13, "/", &["--tls-max", "1.2"]);
    assert!(!ok, "a TLS 1.2 client got through a 1.3-only listener");
    assert!(err.contains("version") || err.contains("alert"), "{err}");
    assert_eq!(
        wait_metric(
            w.admin,
            "weir_tls_handshakes_total{listener=\"v13\",version=\"\",result=\"protocol_version\"}",
            1.0
        )
        .await,
        1.0
    );
    assert_eq!(
        metric(
            w.admin,
            "weir_tls_handshakes_total{listener=\"v12\",version=\"1.2\",result=\"ok\"}"
        )
        .await,
        1.0
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let line = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(l) = text.lines().next() {
            break l.to_string();
        }
        assert!(Instant::now() < deadline, "no access log line");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(line.contains("\"tls_version\":\"1.2\""), "{line}");
    assert!(line.contains("\"sni\":\"shop.test\""), "{line}");

    // ALPN: h2 when the client offers it, else http/1.1; a protocol weir does not speak is
    // refused.
    let out = s_client(v12, &["-servername", "shop.test", "-alpn", "h2,http/1.1"]);
    assert!(out.contains("ALPN protocol: h2"), "{out}");
    let out = s_client(v12, &["-servername", "shop.test", "-alpn", "http/1.1"]);
    assert!(out.contains("ALPN protocol: http/1.1"), "{out}");
    let out = s_client(v12, &["-servername", "shop.test", "-alpn", "spdy/3"]);
    assert!(out.contains("no application protocol"), "{out}");
    assert_eq!(
        wait_metric(w.admin, "weir_tls_handshakes_total{listener=\"v12\",version=\"\",result=\"no_application_protocol\"}", 1.0).await,
        1.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificates_and_the_identity_header() {
    let s = setup();
    let shop = s.ca.leaf(&["shop.test"]).write(s.dir.path(), "shop");
    let clients = Ca::new("clients CA");
    let clients_path = clients.write(s.dir.path(), "clients");
    let alice = clients.leaf(&["alice"]).write(s.dir.path(), "alice");
    let mallory = Ca::new("other")
        .leaf(&["mallory"])
        .write(s.dir.path(), "mallory");
    let up = HttpUpstream::spawn("a").await.unwrap();
    let (required, optional) = (free_addr(), free_addr());
    let listener = |name: &str, addr: SocketAddr, mode: &str| {
        format!(
            "[listeners.{name}]\nbind = \"{addr}\"\npool = \"app\"\n[listeners.{name}.tls]\ncertificates = [{}]\nclient_auth = \"{mode}\"\nclient_ca = \"{}\"\nclient_identity_header = \"X-Client-Subject\"\n",
            pair_toml(&shop, true),
            clients_path.display()
        )
    };
    let cfg = format!(
        "{}{}[pools.app]\nendpoints = [{{ addr = \"{}\" }}]\n",
        listener("req", required, "required"),
        listener("opt", optional, "optional"),
        up.addr()
    );
    let w = Weir::start(&cfg, &[required, optional]);
    let cert = |p: &Pair| {
        vec![
            "--cert".to_string(),
            p.cert.display().to_string(),
            "--key".to_string(),
            p.key.display().to_string(),
        ]
    };
    fn args(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }

    // Required: no certificate, or one from another CA, is refused; alice gets through and
    // the backend learns who she is, never what the client claimed.
    let (ok, _, _) = curl(&s.ca_path, "shop.test", required, "/headers", &[]);
    assert!(!ok);
    let (ok, _, _) = curl(
        &s.ca_path,
        "shop.test",
        required,
        "/headers",
        &args(&cert(&mallory)),
    );
    assert!(!ok);
    let mut a = cert(&alice);
    a.extend(["-H".to_string(), "X-Client-Subject: CN=admin".to_string()]);
    let (ok, out, err) = curl(&s.ca_path, "shop.test", required, "/headers", &args(&a));
    assert!(ok, "{err}");
    assert!(out.contains(r#"["x-client-subject","CN=alice"]"#), "{out}");
    assert!(
        !out.contains("CN=admin"),
        "the client's own identity header reached the backend: {out}"
    );
    assert!(
        wait_metric(w.admin, "weir_tls_handshakes_total{listener=\"req\",version=\"\",result=\"bad_client_certificate\"}", 2.0).await
            >= 1.0
    );

    // Optional: without a certificate the request goes through, with no identity (and the
    // client's claim removed).
    let (ok, out, err) = curl(
        &s.ca_path,
        "shop.test",
        optional,
        "/headers",
        &["-H", "X-Client-Subject: CN=admin"],
    );
    assert!(ok, "{err}");
    assert!(!out.contains("x-client-subject"), "{out}");
    let (ok, out, _) = curl(
        &s.ca_path,
        "shop.test",
        optional,
        "/headers",
        &args(&cert(&alice)),
    );
    assert!(ok);
    assert!(out.contains(r#"["x-client-subject","CN=alice"]"#), "{out}");
}

/// The client CA file is watched as the certificates are: a rotated CA lets in the clients
/// it signs and no longer those of the CA before, with no reload; a file that no longer
/// reads keeps the CA in use.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_client_ca_file_is_read_again() {
    let s = setup();
    let shop = s.ca.leaf(&["shop.test"]).write(s.dir.path(), "shop");
    let old = Ca::new("clients CA 2025");
    let new = Ca::new("clients CA 2026");
    let ca_file = old.write(s.dir.path(), "clients");
    let alice = old.leaf(&["alice"]).write(s.dir.path(), "alice");
    let bob = new.leaf(&["bob"]).write(s.dir.path(), "bob");
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let cfg = format!(
        "[listeners.req]\nbind = \"{listen}\"\npool = \"app\"\n[listeners.req.tls]\ncertificates = [{}]\nclient_auth = \"required\"\nclient_ca = \"{}\"\n[pools.app]\nendpoints = [{{ addr = \"{}\" }}]\n",
        pair_toml(&shop, true),
        ca_file.display(),
        up.addr()
    );
    let w = Weir::start(&cfg, &[listen]);
    let with = |p: &Pair| {
        let (cert, key) = (p.cert.display().to_string(), p.key.display().to_string());
        curl(
            &s.ca_path,
            "shop.test",
            listen,
            "/",
            &["--cert", &cert, "--key", &key],
        )
        .0
    };
    assert!(with(&alice));
    assert!(!with(&bob));
    let reloads = |result: &str| {
        format!("weir_tls_certificate_reloads_total{{listener=\"req\",result=\"{result}\"}}")
    };

    std::fs::copy(new.write(s.dir.path(), "clients-2026"), &ca_file).unwrap();
    assert!(wait_metric(w.admin, &reloads("ok"), 1.0).await >= 1.0);
    assert!(with(&bob), "the new CA's client refused");
    assert!(!with(&alice), "the old CA's client let in");

    let from = w.log_lines();
    std::fs::write(&ca_file, "not a certificate\n").unwrap();
    assert!(wait_metric(w.admin, &reloads("failed"), 1.0).await >= 1.0);
    let line = w.wait_log(from, "client CA not read again", Duration::from_secs(5));
    assert!(line.contains("req"), "{line}");
    assert!(with(&bob), "the CA in use was dropped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_resume_on_any_thread() {
    let s = setup();
    let shop = s.ca.leaf(&["shop.test"]).write(s.dir.path(), "shop");
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let w = Weir::start(
        &tls_config(listen, up.addr(), &[pair_toml(&shop, true)], "", ""),
        &[listen],
    );
    for versions in [&rustls::version::TLS13, &rustls::version::TLS12] {
        let cfg = client_versions(&s.ca.pem, &[], None, &[versions]);
        let first = connect(&cfg, listen, Some("shop.test")).await.unwrap();
        assert!(!first.resumed());
        // The ticket arrives after the handshake: an exchange makes sure it was read.
        let r = first.get("shop.test", "/", "").await;
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        // weir runs two threads: several connections land on both.
        for _ in 0..4 {
            let h = connect(&cfg, listen, Some("shop.test")).await.unwrap();
            assert!(h.resumed(), "TLS {versions:?}: a session was not resumed");
            let r = h.get("shop.test", "/", "").await;
            assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        }
    }
    assert!(
        metric(
            w.admin,
            "weir_tls_handshakes_total{listener=\"web\",version=\"1.3\",result=\"resumed\"}"
        )
        .await
            >= 4.0
    );
    assert!(
        metric(
            w.admin,
            "weir_tls_handshakes_total{listener=\"web\",version=\"1.2\",result=\"resumed\"}"
        )
        .await
            >= 4.0
    );
}

/// Waits until a handshake for `sni` presents `der` (certificate reloads are polled once a
/// second; the "within about 2 s" of docs/CONFIG.md is printed by a caller, not asserted).
async fn wait_for_leaf(
    cfg: &std::sync::Arc<rustls::ClientConfig>,
    addr: SocketAddr,
    der: &[u8],
) -> Duration {
    let start = Instant::now();
    loop {
        if let Ok(h) = connect(cfg, addr, Some("shop.test")).await {
            if h.leaf() == der {
                return start.elapsed();
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the new certificate was never served"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn replace(path: &Path, content: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, content).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificates_reload_when_their_files_change() {
    let s = setup();
    let first = s.ca.leaf(&["shop.test"]).write(s.dir.path(), "shop");
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let w = Weir::start(
        &tls_config(listen, up.addr(), &[pair_toml(&first, true)], "", ""),
        &[listen],
    );
    let cfg = client(&s.ca.pem, &[], None);
    assert_eq!(
        connect(&cfg, listen, Some("shop.test"))
            .await
            .unwrap()
            .leaf(),
        first.der
    );

    // The served certificate's expiry is exported (a leaf is valid for a year from now).
    let expiry = metric(
        w.admin,
        "weir_tls_certificate_expiry_timestamp_seconds{listener=\"web\",name=\"shop.test\"}",
    )
    .await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(expiry > now + 300.0 * 86400.0, "{expiry}");

    // Rename-replace of both files: the new pair is served.
    let second = s.ca.leaf(&["shop.test"]);
    replace(&first.key, &second.key_pem);
    replace(&first.cert, &second.cert_pem);
    let took = wait_for_leaf(&cfg, listen, &second.der).await;
    eprintln!("the new pair was served {took:?} after the files were replaced");
    assert!(
        wait_metric(
            w.admin,
            "weir_tls_certificate_reloads_total{listener=\"web\",result=\"ok\"}",
            1.0
        )
        .await
            >= 1.0
    );

    // A key that does not match the certificate: the previous pair stays, the reason is
    // logged and counted.
    let from = w.log_lines();
    let third = s.ca.leaf(&["shop.test"]);
    replace(&first.cert, &third.cert_pem);
    let line = w.wait_log(from, "certificate not reloaded", Duration::from_secs(20));
    assert!(line.contains("does not match"), "{line}");
    assert_eq!(
        wait_metric(
            w.admin,
            "weir_tls_certificate_reloads_total{listener=\"web\",result=\"failed\"}",
            1.0
        )
        .await,
        1.0
    );
    assert_eq!(
        connect(&cfg, listen, Some("shop.test"))
            .await
            .unwrap()
            .leaf(),
        second.der
    );
    // Garbage instead of PEM: the same.
    let from = w.log_lines();
    replace(&first.key, "not a key\n");
    let line = w.wait_log(from, "certificate not reloaded", Duration::from_secs(20));
    assert!(
        line.contains("holds no private key") || line.contains("not valid PEM"),
        "{line}"
    );
    assert_eq!(
        connect(&cfg, listen, Some("shop.test"))
            .await
            .unwrap()
            .leaf(),
        second.der
    );
    // The matching key arrives: the third pair is served.
    replace(&first.key, &third.key_pem);
    wait_for_leaf(&cfg, listen, &third.der).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubernetes_secret_symlink_swap_is_seen() {
    // A mounted secret: tls.crt -> ..data/tls.crt, ..data -> ..2026_a; an update writes
    // ..2026_b and swaps ..data atomically.
    let s = setup();
    let d = s.dir.path();
    let write_version = |name: &str, p: &Pair| {
        let v = d.join(name);
        std::fs::create_dir(&v).unwrap();
        std::fs::write(v.join("tls.crt"), &p.cert_pem).unwrap();
        std::fs::write(v.join("tls.key"), &p.key_pem).unwrap();
    };
    let first = s.ca.leaf(&["shop.test"]);
    write_version("..2026_a", &first);
    std::os::unix::fs::symlink("..2026_a", d.join("..data")).unwrap();
    std::os::unix::fs::symlink("..data/tls.crt", d.join("tls.crt")).unwrap();
    std::os::unix::fs::symlink("..data/tls.key", d.join("tls.key")).unwrap();
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let certs = format!(
        "{{ cert = \"{}\", key = \"{}\", default = true }}",
        d.join("tls.crt").display(),
        d.join("tls.key").display()
    );
    let _w = Weir::start(&tls_config(listen, up.addr(), &[certs], "", ""), &[listen]);
    let cfg = client(&s.ca.pem, &[], None);
    assert_eq!(
        connect(&cfg, listen, Some("shop.test"))
            .await
            .unwrap()
            .leaf(),
        first.der
    );

    let second = s.ca.leaf(&["shop.test"]);
    write_version("..2026_b", &second);
    std::os::unix::fs::symlink("..2026_b", d.join("..data_tmp")).unwrap();
    std::fs::rename(d.join("..data_tmp"), d.join("..data")).unwrap();
    wait_for_leaf(&cfg, listen, &second.der).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_redirect_and_hsts() {
    let s = setup();
    let shop = s.ca.leaf(&["shop.test"]).write(s.dir.path(), "shop");
    let up = HttpUpstream::spawn("a").await.unwrap();
    let (plain, tls) = (free_addr(), free_addr());
    let cfg = format!(
        r#"
[listeners.plain]
bind = "{plain}"
pool = "app"
[listeners.tls]
bind = "{tls}"
pool = "app"
[listeners.tls.tls]
certificates = [{}]
[routes.to_https]
listener = "plain"
host = "shop.test"
pool = "app"
https_redirect = true
[routes.to_port]
listener = "plain"
host = "port.test"
pool = "app"
https_redirect = true
https_port = 8443
[routes.secure]
listener = "tls"
host = "shop.test"
pool = "app"
hsts = "max-age=31536000; includeSubDomains"
[pools.app]
endpoints = [{{ addr = "{}" }}]
"#,
        pair_toml(&shop, true),
        up.addr()
    );
    let _w = Weir::start(&cfg, &[plain, tls]);
    let r = crate::common::raw_exchange(
        plain,
        b"POST /cart?id=7 HTTP/1.1\r\nHost: shop.test:8080\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        Duration::from_secs(10),
    )
    .await;
    assert!(r.starts_with("HTTP/1.1 308"), "{r}");
    assert!(r.contains("location: https://shop.test/cart?id=7"), "{r}");
    assert!(r.contains("x-weir-reason: https_redirect"), "{r}");
    let r = crate::common::raw_exchange(
        plain,
        b"GET / HTTP/1.1\r\nHost: port.test\r\nConnection: close\r\n\r\n",
        Duration::from_secs(10),
    )
    .await;
    assert!(r.contains("location: https://port.test:8443/\r\n"), "{r}");
    assert_eq!(up.requests(), 0, "a redirected request reached the backend");
    // Other hosts on the plain listener are not redirected.
    let r = weir_testkit::client::get(plain, "/").await.unwrap();
    assert_eq!(r.status, 200);
    assert!(r.header("strict-transport-security").is_none());

    let (ok, out, err) = curl(&s.ca_path, "shop.test", tls, "/", &[]);
    assert!(ok, "{err}");
    assert!(
        out.to_ascii_lowercase()
            .contains("strict-transport-security: max-age=31536000; includesubdomains"),
        "{out}"
    );
}
