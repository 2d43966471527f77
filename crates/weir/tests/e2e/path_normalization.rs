//! Paths are put in normal form before routing, filters and the upstream (`merge_slashes`,
//! `escaped_slashes`): `..`, `.`, `//` and `%61` tricks cannot route a request past a route's
//! filters, a `..` above the root is refused, and the upstream gets the path weir matched.
//! Sent with real curl (`--path-as-is`, so curl does not clean the path itself), over
//! HTTP/1.1 and HTTP/2.

use std::net::SocketAddr;
use std::process::Command;

use weir_testkit::HttpUpstream;

use crate::common::{free_addr, Weir};

/// `/n/admin/` is closed to loopback clients by `ip_deny`; `/n/` is open. Both pools answer
/// with their name.
fn config(listen: SocketAddr, admin: SocketAddr, open: SocketAddr, listener_extra: &str) -> String {
    format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "open"
{listener_extra}

[pools.admin]
endpoints = [{{ addr = "{admin}" }}]

[pools.open]
endpoints = [{{ addr = "{open}" }}]

[filters.no-loopback]
kind = "ip_deny"
addresses = ["127.0.0.0/8"]

[routes.admin]
listener = "web"
path_prefix = "/n/admin/"
pool = "admin"
filters = ["no-loopback"]

[routes.open]
listener = "web"
path_prefix = "/n/"
pool = "open"
"#
    )
}

/// (status, x-weir-reason, body) of one request sent by curl, the path as given.
fn curl(listen: SocketAddr, path: &str, h2: bool) -> (u16, String, String) {
    let mut c = Command::new("curl");
    c.args([
        "-s",
        "--path-as-is",
        "-o",
        "-",
        "-D",
        "-",
        "--max-time",
        "20",
    ]);
    if h2 {
        c.arg("--http2-prior-knowledge");
    }
    c.arg(format!("http://{listen}{path}"));
    let out = c.output().expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status from curl for {path}: {text:?}"));
    let reason = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("x-weir-reason: ")
                .map(str::to_string)
        })
        .unwrap_or_default();
    (status, reason, body.to_string())
}

const TRICKS: &[&str] = &[
    "/n/admin/secret",
    "/n/x/../admin/secret",
    "/n//admin/secret",
    "/n/./admin/secret",
    "/n/%61dmin/secret",
    "/n/x/%2e%2e/admin/secret",
    "/n/x/%2E%2E/admin/./secret",
    "//n///admin//secret",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn path_tricks_cannot_pass_a_routes_filters() {
    let admin = HttpUpstream::spawn("admin").await.unwrap();
    let open = HttpUpstream::spawn("open").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(&config(listen, admin.addr(), open.addr(), ""), &[listen]);
    tokio::task::spawn_blocking(move || {
        for h2 in [false, true] {
            for path in TRICKS {
                let (status, reason, body) = curl(listen, path, h2);
                assert_eq!(
                    (status, reason.as_str()),
                    (403, "forbidden"),
                    "{path} (h2: {h2}) must meet the admin route's ip_deny: {body}"
                );
            }
            // The open route still answers, from the open pool.
            let (status, _, body) = curl(listen, "/n/x/./y/../z", h2);
            assert_eq!((status, body.trim()), (200, "open"), "h2: {h2}");
        }
    })
    .await
    .unwrap();
    assert_eq!(admin.requests(), 0, "no trick reached the admin pool");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_above_the_root_or_badly_escaped_is_refused_with_400() {
    let admin = HttpUpstream::spawn("admin").await.unwrap();
    let open = HttpUpstream::spawn("open").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(&config(listen, admin.addr(), open.addr(), ""), &[listen]);
    tokio::task::spawn_blocking(move || {
        for h2 in [false, true] {
            for path in [
                "/..",
                "/n/../../admin/secret",
                "/%2e%2e/etc/passwd",
                "/n/%zz",
                "/n/a%2",
            ] {
                let (status, reason, _) = curl(listen, path, h2);
                assert_eq!(
                    (status, reason.as_str()),
                    (400, "bad_request"),
                    "{path} (h2: {h2})"
                );
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(admin.requests() + open.requests(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_gets_the_normal_path_and_the_query_as_sent() {
    let admin = HttpUpstream::builder("admin")
        .record_log(true)
        .spawn()
        .await
        .unwrap();
    let open = HttpUpstream::builder("open")
        .record_log(true)
        .spawn()
        .await
        .unwrap();
    let listen = free_addr();
    let _w = Weir::start(&config(listen, admin.addr(), open.addr(), ""), &[listen]);
    tokio::task::spawn_blocking(move || {
        let (status, _, _) = curl(listen, "/n/a/./b/../%7Ec%2f//d%3f?x=%61&y=/../z", false);
        assert_eq!(status, 200);
    })
    .await
    .unwrap();
    let log = open.log();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].uri.to_string(), "/n/a/~c%2F/d%3F?x=%61&y=/../z");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn encoded_slashes_are_kept_refused_or_decoded_as_the_listener_says() {
    let admin = HttpUpstream::builder("admin")
        .record_log(true)
        .spawn()
        .await
        .unwrap();
    let open = HttpUpstream::builder("open")
        .record_log(true)
        .spawn()
        .await
        .unwrap();
    let trick = "/n/x%2F..%2Fadmin/secret";

    // keep (the default): one segment, routed to the open pool as it came.
    let listen = free_addr();
    let w = Weir::start(&config(listen, admin.addr(), open.addr(), ""), &[listen]);
    let got = tokio::task::spawn_blocking(move || curl(listen, trick, false))
        .await
        .unwrap();
    assert_eq!((got.0, got.2.trim()), (200, "open"));
    assert_eq!(open.log().last().unwrap().uri.to_string(), trick);
    drop(w);

    // reject: 400.
    let listen = free_addr();
    let extra = "escaped_slashes = \"reject\"";
    let w = Weir::start(&config(listen, admin.addr(), open.addr(), extra), &[listen]);
    let got = tokio::task::spawn_blocking(move || curl(listen, trick, false))
        .await
        .unwrap();
    assert_eq!((got.0, got.1.as_str()), (400, "bad_request"));
    drop(w);

    // decode: `/n/admin/secret`, which the admin route's filter refuses.
    let listen = free_addr();
    let extra = "escaped_slashes = \"decode\"";
    let w = Weir::start(&config(listen, admin.addr(), open.addr(), extra), &[listen]);
    let got = tokio::task::spawn_blocking(move || curl(listen, trick, true))
        .await
        .unwrap();
    assert_eq!((got.0, got.1.as_str()), (403, "forbidden"));
    drop(w);

    // merge_slashes = false: `//` kept, up to the upstream.
    let listen = free_addr();
    let extra = "merge_slashes = false";
    let _w = Weir::start(&config(listen, admin.addr(), open.addr(), extra), &[listen]);
    let got = tokio::task::spawn_blocking(move || curl(listen, "/n/a//b/./c", false))
        .await
        .unwrap();
    assert_eq!(got.0, 200);
    assert_eq!(open.log().last().unwrap().uri.to_string(), "/n/a//b/c");
    assert_eq!(admin.requests(), 0);
}
