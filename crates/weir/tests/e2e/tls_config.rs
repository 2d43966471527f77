//! TLS settings meet the files they name: `weir check` reports a bad pair at its line and
//! column, `weir run` refuses to start on one, a reload or an API change naming one is
//! refused and the running config keeps serving, and a listener added through the API
//! serves TLS at once.

use std::process::Command;
use std::time::Duration;

use serde_json::json;
use weir_testkit::certs::{Ca, Validity};
use weir_testkit::HttpUpstream;

use crate::api_client::{add, call, get};
use crate::common::{free_addr, Weir, WEIR};
use crate::tls_kit::{client, connect};

#[test]
fn check_names_the_bad_pair_at_its_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("ca");
    let a = ca.leaf(&["a.test"]).write(dir.path(), "a");
    let b = ca.leaf(&["b.test"]).write(dir.path(), "b");
    let soon = ca
        .leaf_valid(
            &["soon.test"],
            Validity {
                from_days: -10,
                to_days: 5,
            },
        )
        .write(dir.path(), "soon");
    let cfg = dir.path().join("weir.toml");
    std::fs::write(
        &cfg,
        format!(
            "[listeners.web]\nbind = \"127.0.0.1:8443\"\npool = \"app\"\n[listeners.web.tls]\ncertificates = [\n  {{ cert = \"{}\", key = \"{}\" }},\n  {{ cert = \"{}\", key = \"{}\", default = true }},\n]\n[pools.app]\nendpoints = [{{ addr = \"127.0.0.1:9001\" }}]\n",
            a.cert.display(),
            b.key.display(),
            soon.cert.display(),
            soon.key.display()
        ),
    )
    .unwrap();
    let out = Command::new(WEIR).arg("check").arg(&cfg).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let key_col = format!("  {{ cert = \"{}\", key = ", a.cert.display()).len() + 1;
    assert!(
        err.contains(&format!("weir.toml:6:{key_col}: error: the key in")),
        "{err}"
    );
    assert!(err.contains("does not match the certificate"), "{err}");
    assert!(err.contains("weir.toml:7:12: warning:"), "{err}");
    assert!(
        err.contains("expires in 4 days") || err.contains("expires in 5 days"),
        "{err}"
    );

    // weir run refuses the same file, with the same error, before listening.
    let out = Command::new(WEIR)
        .args(["run", "-c"])
        .arg(&cfg)
        .args(["--admin", &free_addr().to_string()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not match the certificate"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_naming_a_bad_pair_is_rejected_and_tls_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("ca");
    let good = ca.leaf(&["shop.test"]).write(dir.path(), "good");
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let cfg = |cert: &std::path::Path, key: &std::path::Path| {
        format!(
            "[listeners.web]\nbind = \"{listen}\"\npool = \"app\"\n[listeners.web.tls]\ncertificates = [{{ cert = \"{}\", key = \"{}\", default = true }}]\n[pools.app]\nendpoints = [{{ addr = \"{}\" }}]\n",
            cert.display(),
            key.display(),
            up.addr()
        )
    };
    let w = Weir::start(&cfg(&good.cert, &good.key), &[listen]);
    let outcome = w.reload(&cfg(&dir.path().join("missing.pem"), &good.key));
    // Rejected like any invalid file: at the line and column of the path.
    assert!(outcome.contains("reload rejected"), "{outcome}");
    assert!(w.log_text().contains("weir.toml:5:"), "{}", w.log_text());
    assert!(w.log_text().contains("cannot read"), "{}", w.log_text());
    let tls = client(&ca.pem, &[], None);
    let h = connect(&tls, listen, Some("shop.test")).await.unwrap();
    assert_eq!(h.leaf(), good.der);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_adds_a_tls_listener_and_refuses_one_whose_pair_does_not_load() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("ca");
    let good = ca.leaf(&["shop.test"]).write(dir.path(), "good");
    let other = ca.leaf(&["other.test"]).write(dir.path(), "other");
    let data = tempfile::tempdir().unwrap();
    let w = Weir::store(data.path());
    let a = w.admin;
    let up = HttpUpstream::spawn("a").await.unwrap();
    add(a, "pools/app", json!({})).await;
    add(a, &format!("pools/app/endpoints/{}", up.addr()), json!({})).await;
    let listen = free_addr();
    let spec = |cert: &std::path::Path, key: &std::path::Path| {
        json!({"bind": listen.to_string(), "pool": "app", "tls": {
            "certificates": [{"cert": cert.display().to_string(), "key": key.display().to_string(), "default": true}]
        }})
    };
    let r = call(
        a,
        "PUT",
        "listeners/web",
        &[("if-none-match", "*")],
        Some(spec(&good.cert, &other.key)),
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text());
    let body: serde_json::Value = serde_json::from_str(&r.text()).unwrap();
    assert_eq!(body["field"], "listeners/web/tls", "{body}");
    assert!(
        body["detail"].as_str().unwrap().contains("does not match"),
        "{body}"
    );
    assert_eq!(get(a, "listeners/web").await.status, 404);

    add(a, "listeners/web", spec(&good.cert, &good.key)).await;
    let tls = client(&ca.pem, &[], None);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let h = loop {
        match connect(&tls, listen, Some("shop.test")).await {
            Ok(h) => break h,
            Err(e) if std::time::Instant::now() > deadline => panic!("{e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    };
    assert_eq!(h.leaf(), good.der);
    let r = h.get("shop.test", "/", "").await;
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
}
