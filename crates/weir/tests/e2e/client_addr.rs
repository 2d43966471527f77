//! The client's real address behind trusted proxies (`trusted_proxies`), through the real
//! binary: a trusted peer's X-Forwarded-For is believed (and appended to), anyone else's is
//! replaced, and the resolved address is what the access log and `hash` see. Peers are told
//! apart by the loopback address a test connects from (127.0.0.1 trusted, 127.0.0.2 not).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use serde_json::Value;
use weir_testkit::HttpUpstream;

use crate::common::{free_addr, Weir};

/// weir with a `hash` pool keyed by `key` over two upstreams ("a" and "b"), its listener
/// given `listener_extra`: weir, its address, and the upstreams (kept alive by the caller).
async fn hash_pool(
    key: &str,
    listener_extra: &str,
) -> (Weir, SocketAddr, (HttpUpstream, HttpUpstream)) {
    let (a, b) = (
        HttpUpstream::spawn("a").await.unwrap(),
        HttpUpstream::spawn("b").await.unwrap(),
    );
    let listen = free_addr();
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "app"
{listener_extra}

[pools.app]
balance = "hash"
hash_key = "{key}"
endpoints = [{{ addr = "{}" }}, {{ addr = "{}" }}]
"#,
        a.addr(),
        b.addr()
    );
    let w = Weir::start(&cfg, &[listen]);
    (w, listen, (a, b))
}

/// Which upstream answered (its `x-upstream`), from a whole 200 response.
fn served_by(r: &str) -> String {
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    r.lines()
        .find_map(|l| l.strip_prefix("x-upstream: "))
        .unwrap_or_else(|| panic!("{r}"))
        .trim()
        .to_string()
}

/// Sends `bytes` on a connection from `src` (a loopback address) and reads until the close.
pub async fn raw_from(src: &str, addr: SocketAddr, bytes: &[u8]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.bind(SocketAddr::new(src.parse::<IpAddr>().unwrap(), 0))
        .unwrap();
    let mut s = sock.connect(addr).await.unwrap();
    s.write_all(bytes).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

/// A GET of `path` with the given extra header lines, closing the connection.
pub fn get(path: &str, extra: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: app.test\r\n{extra}Connection: close\r\n\r\n")
        .into_bytes()
}

/// The X-Forwarded-For the backend saw, from its `/headers` answer.
pub fn seen_xff(resp: &str) -> String {
    let body = &resp[resp.find("\r\n\r\n").expect("a response") + 4..];
    let v: Value = serde_json::from_str(body.trim()).unwrap_or_else(|e| panic!("{e}: {resp}"));
    let headers = v["headers"].as_array().unwrap_or_else(|| panic!("{v}"));
    headers
        .iter()
        .filter(|h| h[0] == "x-forwarded-for")
        .map(|h| h[1].as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join(" | ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarded_for_is_believed_only_from_trusted_peers() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "app"
trusted_proxies = ["127.0.0.1", "10.0.0.0/8"]
access_log = "{}"

[pools.app]
endpoints = [{{ addr = "{}" }}]
"#,
        log.display(),
        up.addr()
    );
    let _w = Weir::start(&cfg, &[listen]);

    // A trusted peer: its chain is kept and it is appended; the client is the rightmost
    // hop that is not a trusted proxy (10.1.1.1 is one).
    let r = raw_from(
        "127.0.0.1",
        listen,
        &get(
            "/headers",
            "X-Forwarded-For: 6.6.6.6, 198.51.100.7, 10.1.1.1\r\n",
        ),
    )
    .await;
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    assert_eq!(seen_xff(&r), "6.6.6.6, 198.51.100.7, 10.1.1.1, 127.0.0.1");
    // Forwarded (RFC 7239) when there is no X-Forwarded-For: the backend's X-Forwarded-For
    // carries the chain it names too, not the proxy alone; every Forwarded line is kept.
    let r = raw_from(
        "127.0.0.1",
        listen,
        &get(
            "/headers",
            "Forwarded: for=192.0.2.60\r\nForwarded: for=\"[2001:db8::5]:80\";proto=https\r\n",
        ),
    )
    .await;
    assert_eq!(seen_xff(&r), "192.0.2.60, 2001:db8::5, 127.0.0.1");
    assert!(
        r.contains(r#"["forwarded","for=192.0.2.60, for=\"[2001:db8::5]:80\";proto=https, for=127.0.0.1;proto=http"]"#),
        "{r}"
    );
    // And the other way round: an X-Forwarded-For chain alone is carried into Forwarded.
    let r = raw_from(
        "127.0.0.1",
        listen,
        &get("/headers", "X-Forwarded-For: 192.0.2.61, 2001:db8::6\r\n"),
    )
    .await;
    assert_eq!(seen_xff(&r), "192.0.2.61, 2001:db8::6, 127.0.0.1");
    assert!(
        r.contains(
            r#"["forwarded","for=192.0.2.61, for=\"[2001:db8::6]\", for=127.0.0.1;proto=http"]"#
        ),
        "{r}"
    );
    // An untrusted peer: whatever it claims is replaced by its own address.
    let r = raw_from(
        "127.0.0.2",
        listen,
        &get(
            "/headers",
            "X-Forwarded-For: 6.6.6.6\r\nForwarded: for=6.6.6.6\r\n",
        ),
    )
    .await;
    assert_eq!(seen_xff(&r), "127.0.0.2");
    assert!(
        r.contains(r#"["forwarded","for=127.0.0.2;proto=http"]"#),
        "{r}"
    );

    let lines = crate::common::access_log(&log, 4);
    let clients: Vec<&str> = lines
        .iter()
        .map(|l| l["client"].as_str().unwrap())
        .collect();
    assert_eq!(clients[0], "198.51.100.7", "{lines:?}");
    assert_eq!(clients[1], "2001:db8::5", "{lines:?}");
    assert_eq!(clients[2], "2001:db8::6", "{lines:?}");
    assert!(clients[3].starts_with("127.0.0.2:"), "{lines:?}");
}

/// `hash_key = "client_ip"` hashes the resolved client: the same client behind the proxy
/// always lands on the same endpoint, different ones spread; an untrusted peer's claims
/// change nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hash_sees_the_resolved_client() {
    let (_w, listen, _ups) = hash_pool("client_ip", r#"trusted_proxies = ["127.0.0.1"]"#).await;
    let mut seen = std::collections::HashSet::new();
    for i in 0..32 {
        let xff = format!("X-Forwarded-For: 198.51.100.{i}\r\n");
        let first = served_by(&raw_from("127.0.0.1", listen, &get("/", &xff)).await);
        let again = served_by(&raw_from("127.0.0.1", listen, &get("/", &xff)).await);
        assert_eq!(first, again, "client 198.51.100.{i} moved");
        seen.insert(first);
    }
    assert_eq!(seen.len(), 2, "32 clients all on one endpoint: {seen:?}");
    // From an untrusted peer the header is ignored: one address, one endpoint.
    let mut untrusted = std::collections::HashSet::new();
    for i in 0..8 {
        let xff = format!("X-Forwarded-For: 198.51.100.{i}\r\n");
        untrusted.insert(served_by(
            &raw_from("127.0.0.2", listen, &get("/", &xff)).await,
        ));
    }
    assert_eq!(untrusted.len(), 1, "{untrusted:?}");
}

/// A `header:` hash key reads the request as the upstream gets it: weir's own
/// `X-Forwarded-For` (written beside the request's map, not in it), never the value an
/// untrusted client sent in its place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_key_reads_the_forwarded_for_weir_sends() {
    let (_w, listen, _ups) = hash_pool("header:x-forwarded-for", "").await;
    // One peer, whatever it claims: one value, one endpoint.
    let mut one = std::collections::HashSet::new();
    for i in 0..8 {
        let xff = format!("X-Forwarded-For: 198.51.100.{i}\r\n");
        one.insert(served_by(
            &raw_from("127.0.0.1", listen, &get("/", &xff)).await,
        ));
    }
    assert_eq!(one.len(), 1, "{one:?}");
    // Peers of their own: their addresses spread over both.
    let mut spread = std::collections::HashSet::new();
    for i in 1..=32 {
        let peer = format!("127.0.0.{i}");
        spread.insert(served_by(&raw_from(&peer, listen, &get("/", "")).await));
    }
    assert_eq!(spread.len(), 2, "32 peers all on one endpoint: {spread:?}");
}

/// The admin API reads the keys with the config file's readers: a bad value is refused
/// (422, as every invalid change is) naming its field, and a good one is taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_names_a_bad_key() {
    use crate::api_client::{add, call, json};
    use serde_json::json;
    let data = tempfile::tempdir().unwrap();
    let w = Weir::store(data.path());
    let a = w.admin;
    add(a, "pools/app", json!({"send_proxy": "v2"})).await;
    let bind = free_addr().to_string();
    let cases = [
        (
            "pools/p2",
            json!({"send_proxy": "v3"}),
            "pools/p2/send_proxy",
        ),
        (
            "listeners/web",
            json!({"bind": bind, "pool": "app", "proxy_protocol": true}),
            "listeners/web/proxy_protocol",
        ),
        (
            "listeners/web",
            json!({"bind": bind, "pool": "app", "trusted_proxies": ["10.0.0.1/8"]}),
            "listeners/web/trusted_proxies",
        ),
    ];
    for (path, spec, field) in cases {
        let r = call(
            a,
            "PUT",
            path,
            &[("if-none-match", "*")],
            Some(spec.clone()),
        )
        .await;
        assert_eq!(r.status, 422, "{spec}: {}", r.text());
        let p = json(&r);
        let f = p["field"].as_str().unwrap_or_else(|| panic!("{p}"));
        assert!(f.starts_with(field), "{spec}: {p}");
    }
    add(
        a,
        "listeners/web",
        json!({"bind": bind, "pool": "app", "proxy_protocol": true, "trusted_proxies": ["127.0.0.1"]}),
    )
    .await;
}
