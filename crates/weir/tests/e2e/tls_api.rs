//! Certificates through the API (`certificates/NAME`): added with their TLS
//! listener in one transaction, replaced and deleted live, a bad one refused at its field
//! with the old one still served, and the private key never read back.

use serde_json::{json, Value};
use weir_testkit::certs::{Ca, Pair};

use crate::api_client::{call, get, json, version};
use crate::common::{free_addr, Weir};
use crate::tls_kit::{client, connect};

fn spec(p: &Pair, default: bool) -> Value {
    json!({"listener": "web", "cert_pem": p.cert_pem, "key_pem": p.key_pem, "default": default})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificates_are_added_replaced_and_deleted_live_and_their_key_never_shown() {
    let data = tempfile::tempdir().unwrap();
    let w = Weir::store(data.path());
    let a = w.admin;
    let listen = free_addr();
    let ca = Ca::new("weir test CA");
    let cfg = client(&ca.pem, &["http/1.1"], None);
    let shop = ca.leaf(&["shop.test"]);
    let api = ca.leaf(&["api.test"]);

    // A TLS listener with no certificate files, and its certificates, in one transaction.
    let body = json!({"changes": [
        {"op": "put", "path": "pools/app", "if_none_match": "*", "spec": {}},
        {"op": "put", "path": "listeners/web", "if_none_match": "*",
         "spec": {"bind": listen.to_string(), "pool": "app", "tls": {}}},
        {"op": "put", "path": "certificates/shop", "if_none_match": "*", "spec": spec(&shop, true)},
        {"op": "put", "path": "certificates/api", "if_none_match": "*", "spec": spec(&api, false)},
    ]});
    let r = call(a, "POST", "transaction", &[], Some(body)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let h = connect(&cfg, listen, Some("shop.test")).await.unwrap();
    assert_eq!(h.leaf(), shop.der);
    let h = connect(&cfg, listen, Some("api.test")).await.unwrap();
    assert_eq!(h.leaf(), api.der);

    // Never read back: not by GET, the list, the PUT's answer, nor export.
    let r = get(a, "certificates/shop").await;
    assert_eq!(r.status, 200);
    assert!(!r.text().contains("PRIVATE KEY"), "{}", r.text());
    assert_eq!(
        json(&r),
        json!({"listener": "web", "cert_pem": shop.cert_pem, "default": true})
    );
    let v = version(&r);
    let list = get(a, "certificates").await;
    assert_eq!(list.status, 200);
    assert!(!list.text().contains("PRIVATE KEY"), "{}", list.text());
    assert_eq!(json(&list)["items"].as_array().unwrap().len(), 2);
    let export = get(a, "export").await;
    assert!(!export.text().contains("PRIVATE KEY"), "{}", export.text());
    assert!(export.text().contains("[certificates.shop]"));
    assert!(export.text().contains("add key_pem"));

    // Replaced with If-Match: new handshakes get the new certificate at once.
    let shop2 = ca.leaf(&["shop.test", "www.shop.test"]);
    let tag = format!("\"{v}\"");
    let r = call(
        a,
        "PUT",
        "certificates/shop",
        &[("if-match", &tag)],
        Some(spec(&shop2, true)),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(!r.text().contains("PRIVATE KEY"), "{}", r.text());
    let v = version(&r);
    let h = connect(&cfg, listen, Some("www.shop.test")).await.unwrap();
    assert_eq!(h.leaf(), shop2.der);

    // A key that is not the certificate's: 422 at the field; the old pair is still served.
    let other = ca.leaf(&["shop.test"]);
    let mut bad = spec(&other, true);
    bad["key_pem"] = json!(shop.key_pem);
    let tag = format!("\"{v}\"");
    let r = call(
        a,
        "PUT",
        "certificates/shop",
        &[("if-match", &tag)],
        Some(bad),
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(json(&r)["field"], "certificates/shop/key_pem");
    assert!(!r.text().contains("PRIVATE KEY"), "{}", r.text());
    assert_eq!(version(&get(a, "certificates/shop").await), v);
    let h = connect(&cfg, listen, Some("shop.test")).await.unwrap();
    assert_eq!(h.leaf(), shop2.der);
    // Not PEM at all: at cert_pem.
    let mut bad = spec(&other, true);
    bad["cert_pem"] = json!("hello");
    let r = call(
        a,
        "PUT",
        "certificates/shop",
        &[("if-match", &tag)],
        Some(bad),
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), json(&r)["field"].clone()),
        (422, json!("certificates/shop/cert_pem"))
    );

    // Deleted: its name gets the default (which the client refuses: not its name)...
    let va = version(&get(a, "certificates/api").await);
    let tag = format!("\"{va}\"");
    let r = call(a, "DELETE", "certificates/api", &[("if-match", &tag)], None).await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(get(a, "certificates/api").await.status, 404);
    let e = connect(&cfg, listen, Some("api.test")).await.err().unwrap();
    assert!(
        e.to_string().contains("not valid for name") && e.to_string().contains("www.shop.test"),
        "{e}"
    );
    // ...or, with no default left, is refused.
    let tag = format!("\"{v}\"");
    let r = call(
        a,
        "PUT",
        "certificates/shop",
        &[("if-match", &tag)],
        Some(spec(&shop2, false)),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let e = connect(&cfg, listen, Some("api.test")).await.err().unwrap();
    assert!(e.to_string().contains("UnrecognisedName"), "{e}");
    let h = connect(&cfg, listen, Some("shop.test")).await.unwrap();
    assert_eq!(h.leaf(), shop2.der);

    // The listener's last certificate cannot go: 422 at its `tls`.
    let v = version(&get(a, "certificates/shop").await);
    let tag = format!("\"{v}\"");
    let r = call(
        a,
        "DELETE",
        "certificates/shop",
        &[("if-match", &tag)],
        None,
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), json(&r)["field"].clone()),
        (422, json!("listeners/web/tls"))
    );
    let h = connect(&cfg, listen, Some("shop.test")).await.unwrap();
    assert_eq!(h.leaf(), shop2.der);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_needs_a_tls_listener() {
    let data = tempfile::tempdir().unwrap();
    let w = Weir::store(data.path());
    let a = w.admin;
    let ca = Ca::new("weir test CA");
    let shop = ca.leaf(&["shop.test"]);
    let r = call(
        a,
        "PUT",
        "certificates/shop",
        &[("if-none-match", "*")],
        Some(spec(&shop, true)),
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), json(&r)["field"].clone()),
        (422, json!("certificates/shop/listener"))
    );
    let body = json!({"changes": [
        {"op": "put", "path": "pools/app", "if_none_match": "*", "spec": {}},
        {"op": "put", "path": "listeners/web", "if_none_match": "*",
         "spec": {"bind": free_addr().to_string(), "pool": "app"}},
        {"op": "put", "path": "certificates/shop", "if_none_match": "*", "spec": spec(&shop, true)},
    ]});
    let r = call(a, "POST", "transaction", &[], Some(body)).await;
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(json(&r)["field"], "certificates/shop/listener");
    assert!(json(&r)["detail"]
        .as_str()
        .unwrap()
        .contains("has no [tls] table"));
    assert_eq!(json(&get(a, "config").await)["revision"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_certificate_that_expired_does_not_keep_weir_from_starting() {
    let data = tempfile::tempdir().unwrap();
    let listen = free_addr();
    let ca = Ca::new("weir test CA");
    let old = ca.leaf_valid(
        &["old.test"],
        weir_testkit::certs::Validity {
            from_days: -30,
            to_days: -1,
        },
    );
    // As if it had expired while stored: written past the API, which would refuse it.
    {
        use weir_store::{Change, Kind, Precondition, Store};
        let store = Store::open(data.path()).unwrap();
        let put = |kind, name: &str, body| Change::Put {
            kind,
            name: name.into(),
            body,
            pre: Precondition::Absent,
        };
        store
            .commit_all(
                vec![
                    put(Kind::Pool, "app", json!({})),
                    put(
                        Kind::Listener,
                        "web",
                        json!({"bind": listen.to_string(), "pool": "app", "tls": {}}),
                    ),
                    put(Kind::Certificate, "old", spec(&old, true)),
                ],
                |_| Ok::<(), ()>(()),
            )
            .unwrap();
    }
    let mut w = Weir::store(data.path());
    w.wait_listening(listen);
    w.wait_log(0, "expired on", std::time::Duration::from_secs(10));
    // It is served (the client refuses it), and it can be replaced.
    let cfg = client(&ca.pem, &["http/1.1"], None);
    let e = connect(&cfg, listen, Some("old.test")).await.err().unwrap();
    assert!(e.to_string().contains("xpired"), "{e}");
    let new = ca.leaf(&["old.test"]);
    let v = version(&get(w.admin, "certificates/old").await);
    let tag = format!("\"{v}\"");
    let r = call(
        w.admin,
        "PUT",
        "certificates/old",
        &[("if-match", &tag)],
        Some(spec(&new, true)),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let h = connect(&cfg, listen, Some("old.test")).await.unwrap();
    assert_eq!(h.leaf(), new.der);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_file_a_certificate_is_replaced_by_a_reload_and_read_without_its_key() {
    let listen = free_addr();
    let ca = Ca::new("weir test CA");
    let file = |p: &Pair| {
        format!(
            "[listeners.web]\nbind = \"{listen}\"\npool = \"app\"\n[listeners.web.tls]\n\n[pools.app]\n\n[certificates.shop]\nlistener = \"web\"\ndefault = true\ncert_pem = '''\n{}'''\nkey_pem = '''\n{}'''\n",
            p.cert_pem, p.key_pem
        )
    };
    let first = ca.leaf(&["shop.test"]);
    let w = Weir::start(&file(&first), &[listen]);
    let cfg = client(&ca.pem, &["http/1.1"], None);
    let h = connect(&cfg, listen, Some("shop.test")).await.unwrap();
    assert_eq!(h.leaf(), first.der);
    let r = get(w.admin, "certificates/shop").await;
    assert_eq!(r.status, 200);
    assert!(!r.text().contains("PRIVATE KEY"), "{}", r.text());
    // File mode: the file is the truth, the API does not write certificates.
    let r = call(
        w.admin,
        "PUT",
        "certificates/other",
        &[("if-none-match", "*")],
        Some(spec(&first, false)),
    )
    .await;
    assert_eq!(r.status, 409, "{}", r.text());

    let second = ca.leaf(&["shop.test"]);
    let out = w.reload(&file(&second));
    assert!(out.contains("config reloaded"), "{out}");
    let h = connect(&cfg, listen, Some("shop.test")).await.unwrap();
    assert_eq!(h.leaf(), second.der);
    // A mismatched pair is refused; the running one stays.
    let mut bad = second.clone();
    bad.key_pem = first.key_pem.clone();
    let out = w.reload(&file(&bad));
    assert!(out.contains("reload rejected"), "{out}");
    assert!(w.log_text().contains("does not match"), "{}", w.log_text());
    let h = connect(&cfg, listen, Some("shop.test")).await.unwrap();
    assert_eq!(h.leaf(), second.der);
}
