//! `/api/v1/stats` on a TLS listener: its settings, the certificates it
//! serves (names, default, expiry, days left) and its handshakes by result; a certificate
//! replaced on disk shows there once it is reloaded; never any key material.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use weir_testkit::certs::{Ca, Validity};
use weir_testkit::{client as http_client, HttpUpstream};

use crate::common::{free_addr, raw_exchange, Weir};
use crate::tls_kit::{client, connect};

async fn stats(w: &Weir) -> Value {
    let r = http_client::get(w.admin, "/api/v1/stats").await.unwrap();
    assert_eq!(r.status, 200);
    serde_json::from_slice(&r.body).unwrap()
}

fn listener<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["listeners"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == name)
        .unwrap_or_else(|| panic!("no listener {name} in {v}"))
}

fn names(cert: &Value) -> Vec<&str> {
    cert["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect()
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn replace(path: &std::path::Path, content: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, content).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_show_tls_certificates_and_follow_a_reload() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("weir test CA");
    let shop = ca
        .leaf_valid(
            &["shop.test", "www.shop.test"],
            Validity {
                from_days: -1,
                to_days: 30,
            },
        )
        .write(dir.path(), "shop");
    let up = HttpUpstream::spawn("a").await.unwrap();
    let (listen, plain) = (free_addr(), free_addr());
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "app"
[listeners.web.tls]
certificates = [{{ cert = "{}", key = "{}", default = true }}]
min_version = "1.3"

[listeners.plain]
bind = "{plain}"
pool = "app"

[pools.app]
endpoints = [{{ addr = "{}" }}]
"#,
        shop.cert.display(),
        shop.key.display(),
        up.addr()
    );
    let w = Weir::start(&cfg, &[listen, plain]);

    // One full handshake and one plain-text request on the TLS port.
    let cfg = client(&ca.pem, &[], None);
    connect(&cfg, listen, Some("shop.test")).await.unwrap();
    raw_exchange(
        listen,
        b"GET / HTTP/1.1\r\nhost: x\r\n\r\n",
        Duration::from_secs(5),
    )
    .await;

    let start = Instant::now();
    let v = loop {
        let v = stats(&w).await;
        let h = &listener(&v, "web")["tls"]["handshakes"];
        if h["ok"] == 1 && h["not_tls"] == 1 {
            break v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "handshakes not counted: {h}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let body = v.to_string();
    assert!(
        !body.contains("PRIVATE KEY") && !body.contains(&*shop.key.to_string_lossy()),
        "the stats show key material or the key's path: {body}"
    );
    assert!(
        listener(&v, "plain").get("tls").is_none(),
        "a plain listener has tls: {v}"
    );
    let tls = &listener(&v, "web")["tls"];
    assert_eq!(tls["min_version"], "1.3", "{tls}");
    assert_eq!(tls["client_auth"], "none", "{tls}");
    let certs = tls["certificates"].as_array().unwrap();
    assert_eq!(certs.len(), 1, "{tls}");
    let c = &certs[0];
    assert_eq!(names(c), ["shop.test", "www.shop.test"], "{c}");
    assert_eq!(c["cert"], shop.cert.display().to_string(), "{c}");
    assert_eq!(c["default"], true, "{c}");
    let not_after = c["not_after"].as_i64().unwrap();
    assert!(
        (not_after - (unix_now() + 30 * 86_400)).abs() < 120,
        "not_after {not_after}"
    );
    let days = c["days_left"].as_f64().unwrap();
    assert!(days > 29.9 && days <= 30.01, "days_left {days}");

    // Rename-replace both files with a pair for other names, expiring sooner: the stats
    // follow once the files are reloaded (polled every second).
    let other = ca.leaf_valid(
        &["other.test"],
        Validity {
            from_days: -1,
            to_days: 7,
        },
    );
    replace(&shop.key, &other.key_pem);
    replace(&shop.cert, &other.cert_pem);
    let start = Instant::now();
    let c = loop {
        let v = stats(&w).await;
        let c = listener(&v, "web")["tls"]["certificates"][0].clone();
        if names(&c) == ["other.test"] {
            break c;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the stats still show {c} 20 s after the files were replaced"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let days = c["days_left"].as_f64().unwrap();
    assert!(
        days > 6.9 && days <= 7.01,
        "days_left {days} after the reload"
    );
    assert_eq!(c["cert"], shop.cert.display().to_string(), "{c}");
    assert_eq!(c["default"], true, "{c}");
}
