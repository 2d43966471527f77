//! The admin listener is safe by default (issue 23 §2, §6): an IPv4-mapped loopback admin
//! address counts as loopback.

use std::net::SocketAddr;

use serde_json::json;

use crate::api_client::{call, get};
use crate::common::{free_port, Weir, WEIR};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ipv4_mapped_loopback_admin_address_is_loopback() {
    // Runs without a token (refused on a non-loopback address), with reads open.
    let data = tempfile::tempdir().unwrap();
    let admin: SocketAddr = format!("[::ffff:127.0.0.1]:{}", free_port())
        .parse()
        .unwrap();
    let w = Weir::store_on(data.path(), admin, &[]);
    let r = call(
        w.admin,
        "PUT",
        "pools/app",
        &[("if-none-match", "*")],
        Some(json!({})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(get(w.admin, "pools/app").await.status, 200);

    // `weir check` agrees: no token needed in the file either.
    let file = data.path().join("weir.toml");
    std::fs::write(
        &file,
        format!("[admin]\nlisten = \"{admin}\"\n\n[pools.app]\nendpoints = []\n"),
    )
    .unwrap();
    let out = std::process::Command::new(WEIR)
        .arg("check")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
