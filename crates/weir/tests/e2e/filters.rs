//! Route filters through the real binary: headers (variables, request id),
//! rewrite, redirect, ip_allow / ip_deny, body_limit; the chain's order; an HTTP/2 client;
//! filters as API resources.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use serde_json::{json, Value};
use weir_testkit::client::{self, Resp};
use weir_testkit::HttpUpstream;

use crate::api_client::{add, call, json as body_json};
use crate::common::{free_addr, raw_exchange, Weir};

async fn send(addr: SocketAddr, req: Request<Full<Bytes>>) -> Resp {
    client::send(addr, req).await.unwrap()
}

fn get(path: &str) -> http::request::Builder {
    Request::get(path).header("host", "shop.test")
}

fn empty() -> Full<Bytes> {
    Full::new(Bytes::new())
}

/// What the upstream's `/headers` saw: (uri, header value by name).
struct Seen(Value);

impl Seen {
    fn of(r: &Resp) -> Seen {
        assert_eq!(r.status, 200, "{}", r.text());
        Seen(serde_json::from_slice(&r.body).unwrap())
    }
    fn uri(&self) -> &str {
        self.0["uri"].as_str().unwrap()
    }
    fn all(&self, name: &str) -> Vec<String> {
        self.0["headers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p[0].as_str().unwrap().eq_ignore_ascii_case(name))
            .map(|p| p[1].as_str().unwrap().to_string())
            .collect()
    }
    fn one(&self, name: &str) -> Option<String> {
        let all = self.all(name);
        assert!(all.len() <= 1, "{name}: {all:?}");
        all.into_iter().next()
    }
}

fn config(listen: SocketAddr, up: SocketAddr, filters: &str, routes: &str) -> String {
    format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "app"

[pools.app]
endpoints = [{{ addr = "{up}" }}]

{filters}

{routes}
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_and_rewrites_change_what_the_upstream_and_client_see() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let filters = r#"
[filters.strip-api]
kind = "rewrite"
strip_prefix = "/api"

[filters.tag]
kind = "headers"
request_set = { "X-Env" = "prod", "X-Client" = "ip={client_ip} host={host} via {scheme} {method} {path}" }
request_add = { "X-Hop" = "weir" }
request_remove = ["X-Debug"]
response_set = { "X-Frame-Options" = "DENY", "X-Id-Echo" = "{request_id}" }
response_remove = ["X-Upstream"]
request_id = "X-Request-Id"

[filters.v2]
kind = "rewrite"
path_regex = "^/old/(?P<rest>.*)$"
path_replacement = "/v2/${rest}"
add_prefix = "/svc"
host = "internal.example:8080"

[filters.fixed]
kind = "rewrite"
replace_path = "/headers"
"#;
    let routes = r#"
[routes.api]
listener = "web"
path_prefix = "/api"
pool = "app"
filters = ["strip-api", "tag"]

[routes.old]
listener = "web"
path_prefix = "/old"
pool = "app"
filters = ["v2"]

[routes.fixed]
listener = "web"
path_prefix = "/anything"
pool = "app"
filters = ["fixed"]
"#;
    let _w = Weir::start(&config(listen, up.addr(), filters, routes), &[listen]);

    // strip_prefix, then the headers: the query stays, the prefix goes in X-Forwarded-Prefix.
    let r = send(
        listen,
        get("/api/headers?q=1")
            .header("x-debug", "1")
            .header("x-hop", "client")
            .header("x-request-id", "chosen-by-client")
            .body(empty())
            .unwrap(),
    )
    .await;
    let seen = Seen::of(&r);
    assert_eq!(seen.uri(), "/headers?q=1");
    assert_eq!(seen.one("x-forwarded-prefix").as_deref(), Some("/api"));
    assert_eq!(seen.one("x-env").as_deref(), Some("prod"));
    assert_eq!(
        seen.one("x-client").as_deref(),
        Some("ip=127.0.0.1 host=shop.test via http GET /api/headers")
    );
    assert_eq!(seen.all("x-hop"), ["client", "weir"]);
    assert_eq!(seen.one("x-debug"), None);
    // The client is not a trusted proxy: its request id is replaced by one weir makes,
    // which goes upstream and comes back.
    let id = seen.one("x-request-id").unwrap();
    assert_eq!(id.len(), 32, "{id}");
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
    assert_eq!(r.header("x-request-id"), Some(id.as_str()));
    assert_eq!(r.header("x-id-echo"), Some(id.as_str()));
    assert_eq!(r.header("x-frame-options"), Some("DENY"));
    assert_eq!(r.header("x-upstream"), None);
    // Each request gets its own id.
    let again = Seen::of(&send(listen, get("/api/headers").body(empty()).unwrap()).await);
    assert_ne!(again.one("x-request-id").unwrap(), id);

    // Routes match plain prefixes (/apix is the api route's), but strip_prefix takes whole
    // segments only: /apix stays as it is.
    let r = send(listen, get("/apix/headers").body(empty()).unwrap()).await;
    assert_eq!(r.status, 200);
    let last = up.log().pop().unwrap();
    assert_eq!(last.uri.to_string(), "/apix/headers");
    assert!(last.headers.get("x-forwarded-prefix").is_none());

    // regex with a named capture, then add_prefix; the Host sent upstream.
    let r = send(listen, get("/old/a/b?z=9").body(empty()).unwrap()).await;
    assert_eq!(r.status, 200);
    let log = up.log();
    let last = log.last().unwrap();
    assert_eq!(last.uri.to_string(), "/svc/v2/a/b?z=9");
    assert_eq!(last.headers["host"], "internal.example:8080");
    // The client's host still goes in X-Forwarded-Host.
    assert_eq!(last.headers["x-forwarded-host"], "shop.test");
    // A path of the route the regex does not match (matched without the regex engine, as
    // text around `.*`): only add_prefix applies.
    let r = send(listen, get("/oldish/x").body(empty()).unwrap()).await;
    assert_eq!(r.status, 200);
    assert_eq!(up.log().last().unwrap().uri.to_string(), "/svc/oldish/x");

    // replace_path.
    let seen = Seen::of(&send(listen, get("/anything/at/all?k=v").body(empty()).unwrap()).await);
    assert_eq!(seen.uri(), "/headers?k=v");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_answer_with_the_changed_url_and_never_loop() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let filters = r#"
[filters.to-https]
kind = "redirect"
scheme = "https"
status = 301

[filters.moved]
kind = "redirect"
path_regex = "^/blog/(\\d+)$"
path_replacement = "/posts/$1"
status = 308
query = "drop"

[filters.elsewhere]
kind = "redirect"
host = "new.example"
port = 8443
"#;
    let routes = r#"
[routes.secure]
listener = "web"
host = "secure.test"
pool = "app"
filters = ["to-https"]

[routes.blog]
listener = "web"
host = "shop.test"
path_prefix = "/blog"
pool = "app"
filters = ["moved"]

[routes.old]
listener = "web"
host = "old.test"
pool = "app"
filters = ["elsewhere"]
"#;
    let w = Weir::start(&config(listen, up.addr(), filters, routes), &[listen]);

    let r = send(
        listen,
        Request::get("/a/b?x=1")
            .header("host", "secure.test:8080")
            .body(empty())
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 301);
    // The scheme changed and no port was given: the new scheme's default port.
    assert_eq!(r.header("location"), Some("https://secure.test/a/b?x=1"));
    assert_eq!(r.header("x-weir-reason"), Some("redirected"));

    let r = send(listen, get("/blog/42?utm=x").body(empty()).unwrap()).await;
    assert_eq!(r.status, 308);
    assert_eq!(r.header("location"), Some("http://shop.test/posts/42"));
    // A path the regex does not match passes on to the upstream.
    let r = send(listen, get("/blog/about").body(empty()).unwrap()).await;
    assert_eq!(
        (r.status.as_u16(), r.header("x-upstream")),
        (200, Some("a"))
    );

    let r = send(
        listen,
        Request::get("/p?q")
            .header("host", "old.test")
            .body(empty())
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 302, "the default status");
    assert_eq!(r.header("location"), Some("http://new.example:8443/p?q"));

    // Only the upstream answered the one request that passed; redirects are counted.
    assert_eq!(up.requests(), 1);
    let prefix = "weir_requests_total{listener=\"web\",route=\"blog\",pool=\"app\",endpoint=\"\",code=\"308\",reason=\"redirected\"}";
    assert_eq!(crate::tls_kit::wait_metric(w.admin, prefix, 1.0).await, 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_and_deny_lists_refuse_with_403() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let filters = r#"
[filters.office]
kind = "ip_allow"
addresses = ["10.0.0.0/8", "2001:db8::/32"]

[filters.local-ok]
kind = "ip_allow"
addresses = ["127.0.0.1", "::1"]

[filters.no-loopback]
kind = "ip_deny"
addresses = ["127.0.0.0/8"]
"#;
    let routes = r#"
[routes.office]
listener = "web"
path_prefix = "/office"
pool = "app"
filters = ["office"]

[routes.local]
listener = "web"
path_prefix = "/local"
pool = "app"
filters = ["local-ok"]

[routes.denied]
listener = "web"
path_prefix = "/denied"
pool = "app"
filters = ["no-loopback"]
"#;
    let cfg = config(listen, up.addr(), filters, routes).replace(
        "pool = \"app\"\n\n[pools.app]",
        &format!(
            "pool = \"app\"\naccess_log = \"{}\"\n\n[pools.app]",
            log.display()
        ),
    );
    let w = Weir::start(&cfg, &[listen]);

    let r = send(listen, get("/office/x").body(empty()).unwrap()).await;
    assert_eq!(r.status, 403);
    assert_eq!(r.header("x-weir-reason"), Some("forbidden"));
    let r = send(listen, get("/local/x").body(empty()).unwrap()).await;
    assert_eq!(r.status, 200);
    let r = send(listen, get("/denied/x").body(empty()).unwrap()).await;
    assert_eq!(r.status, 403);
    assert_eq!(
        up.requests(),
        1,
        "refused requests never reach the upstream"
    );

    let prefix = "weir_requests_total{listener=\"web\",route=\"office\",pool=\"app\",endpoint=\"\",code=\"403\",reason=\"forbidden\"}";
    assert_eq!(crate::tls_kit::wait_metric(w.admin, prefix, 1.0).await, 1.0);
    // The access log names the route and the reason.
    let lines = crate::common::access_log(&log, 3);
    let office: Value = lines
        .iter()
        .find(|l| l["route"] == "office")
        .cloned()
        .unwrap();
    assert_eq!(
        (office["status"].clone(), office["reason"].clone()),
        (json!(403), json!("forbidden"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_limits_refuse_by_length_before_reading_and_count_streamed_bodies() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let filters = r#"
[filters.small]
kind = "body_limit"
max_bytes = "1KiB"
"#;
    let routes = r#"
[routes.upload]
listener = "web"
path_prefix = "/upload"
pool = "app"
filters = ["small"]
"#;
    let _w = Weir::start(&config(listen, up.addr(), filters, routes), &[listen]);

    // Within the limit: passes.
    let r = send(
        listen,
        Request::post("/upload")
            .header("host", "shop.test")
            .body(Full::new(Bytes::from(vec![b'x'; 1024])))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 200);

    // A Content-Length over it, waiting on 100-continue: 413 at once, no 100, and the
    // upstream sees nothing.
    let head = "POST /upload HTTP/1.1\r\nhost: shop.test\r\ncontent-length: 5000\r\nexpect: 100-continue\r\n\r\n";
    let answer = raw_exchange(listen, head.as_bytes(), Duration::from_secs(20)).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(!answer.contains("100 Continue"), "{answer}");
    assert!(answer.contains("body_too_large"), "{answer}");

    // A chunked body that grows past the limit: 413 (what is left of it is drained, up to
    // the server's drain bound, or the connection closes).
    let mut chunked = String::from(
        "POST /upload HTTP/1.1\r\nhost: shop.test\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
    );
    for _ in 0..5 {
        chunked.push_str(&format!("400\r\n{}\r\n", "y".repeat(1024)));
    }
    chunked.push_str("0\r\n\r\n");
    let answer = raw_exchange(listen, chunked.as_bytes(), Duration::from_secs(20)).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    // A chunked body within it passes.
    let small = "POST /upload HTTP/1.1\r\nhost: shop.test\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n";
    let answer = raw_exchange(listen, small.as_bytes(), Duration::from_secs(20)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(up.requests(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http2_client_goes_through_the_same_chain() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let filters = r#"
[filters.strip]
kind = "rewrite"
strip_prefix = "/api"

[filters.tag]
kind = "headers"
response_set = { "X-Tag" = "{scheme}" }

[filters.nobody]
kind = "ip_deny"
addresses = ["0.0.0.0/0", "::/0"]
"#;
    let routes = r#"
[routes.api]
listener = "web"
path_prefix = "/api"
pool = "app"
filters = ["strip", "tag"]

[routes.closed]
listener = "web"
path_prefix = "/closed"
pool = "app"
filters = ["tag", "nobody"]
"#;
    let _w = Weir::start(&config(listen, up.addr(), filters, routes), &[listen]);
    let tcp = tokio::net::TcpStream::connect(listen).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let ask = |path: &'static str| {
        let client = client.clone();
        async move {
            let mut c = client.ready().await.unwrap();
            let req = Request::get(format!("http://shop.test{path}"))
                .body(())
                .unwrap();
            let (resp, _) = c.send_request(req, true).unwrap();
            let resp = resp.await.unwrap();
            let tag = resp.headers().get("x-tag").cloned();
            let status = resp.status().as_u16();
            let mut body = resp.into_body();
            let mut bytes = Vec::new();
            while let Some(chunk) = body.data().await {
                let chunk = chunk.unwrap();
                let _ = body.flow_control().release_capacity(chunk.len());
                bytes.extend_from_slice(&chunk);
            }
            (status, tag, bytes)
        }
    };
    let (status, tag, body) = ask("/api/headers").await;
    assert_eq!(
        (status, tag.as_ref().map(|t| t.to_str().unwrap())),
        (200, Some("http"))
    );
    let seen: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(seen["uri"], "/headers");
    // The deny answers; the headers filter before it still sees the answer.
    let (status, tag, _) = ask("/closed/x").await;
    assert_eq!(
        (status, tag.as_ref().map(|t| t.to_str().unwrap())),
        (403, Some("http"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_are_api_resources_checked_against_the_whole_config() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let data = tempfile::tempdir().unwrap();
    let w = Weir::store(data.path());
    let a = w.admin;
    let listen = free_addr();
    crate::api_client::http_setup(a, listen, &[up.addr()]).await;

    // A filter that does not read names its field.
    let r = call(
        a,
        "PUT",
        "filters/bad",
        &[("if-none-match", "*")],
        Some(json!({"kind": "rewrite", "path_regex": "(", "path_replacement": "/"})),
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(body_json(&r)["field"], "filters/bad/path_regex");
    // A route naming a filter that does not exist.
    let r = call(
        a,
        "PUT",
        "routes/api",
        &[("if-none-match", "*")],
        Some(json!({"listener": "web", "pool": "app", "filters": ["nope"]})),
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(body_json(&r)["field"], "routes/api/filters");
    assert!(r.text().contains("no filter named `nope`"), "{}", r.text());

    add(
        a,
        "filters/deny-all",
        json!({"kind": "ip_deny", "addresses": ["0.0.0.0/0", "::/0"]}),
    )
    .await;
    add(
        a,
        "routes/api",
        json!({"listener": "web", "pool": "app", "filters": ["deny-all"]}),
    )
    .await;
    let r = send(listen, get("/x").body(empty()).unwrap()).await;
    assert_eq!(r.status, 403);

    // A filter a route names cannot be deleted.
    let cur = crate::api_client::get(a, "filters/deny-all").await;
    let tag = format!("\"{}\"", crate::api_client::version(&cur));
    let r = call(a, "DELETE", "filters/deny-all", &[("if-match", &tag)], None).await;
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(up.requests(), 0);

    // Changing the filter changes the next request.
    let v = crate::api_client::version(&cur);
    crate::api_client::update(
        a,
        "filters/deny-all",
        v,
        json!({"kind": "ip_deny", "addresses": ["192.0.2.0/24"]}),
    )
    .await;
    let r = send(listen, get("/x").body(empty()).unwrap()).await;
    assert_eq!(r.status, 200);
    let list = body_json(&crate::api_client::get(a, "filters").await);
    assert_eq!(list["items"][0]["name"], "deny-all", "{list}");
}

#[test]
fn weir_check_names_each_filter_mistake_at_its_line_and_column() {
    let (code, _, err) = crate::check::check_file(
        r#"[listeners.web]
bind = "127.0.0.1:8080"
[pools.app]
endpoints = [{ addr = "127.0.0.1:9001" }]
[routes.r]
listener = "web"
pool = "app"
filters = ["tag", "stirp", "tag"]
[filters.tag]
kind = "headers"
request_set = { "X-A" = "{clientip}" }
[filters.strip]
kind = "rewrite"
path_regex = "("
path_replacement = "/"
"#,
    );
    assert_eq!(code, 1);
    for want in [
        "weir.toml:8:19: error: no filter named `stirp`, did you mean `strip`?",
        "weir.toml:8:28: error: filter `tag` is already in this chain",
        "weir.toml:11:25: error: invalid header value \"{clientip}\": unknown variable `{clientip}`, did you mean `client_ip`?",
        "weir.toml:14:14: error: invalid path_regex",
    ] {
        assert!(err.contains(want), "{want}\n{err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_trusted_proxy_filters_see_the_client_it_names_and_keep_its_request_id() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let filters = r#"
[filters.office]
kind = "ip_allow"
addresses = ["10.0.0.0/8"]

[filters.ids]
kind = "headers"
request_id = "X-Request-Id"
request_set = { "X-Real-IP" = "{client_ip}" }
"#;
    let routes = r#"
[routes.office]
listener = "web"
pool = "app"
filters = ["office", "ids"]
"#;
    let cfg = config(listen, up.addr(), filters, routes).replace(
        "pool = \"app\"\n\n[pools.app]",
        "pool = \"app\"\ntrusted_proxies = [\"127.0.0.1\"]\n\n[pools.app]",
    );
    let _w = Weir::start(&cfg, &[listen]);
    let r = send(
        listen,
        get("/headers")
            .header("x-forwarded-for", "10.1.2.3")
            .header("x-request-id", "from-the-edge-42")
            .body(empty())
            .unwrap(),
    )
    .await;
    let seen = Seen::of(&r);
    assert_eq!(seen.one("x-real-ip").as_deref(), Some("10.1.2.3"));
    assert_eq!(
        seen.one("x-request-id").as_deref(),
        Some("from-the-edge-42")
    );
    assert_eq!(r.header("x-request-id"), Some("from-the-edge-42"));
    // A client outside the list, named by the same trusted proxy.
    let r = send(
        listen,
        get("/headers")
            .header("x-forwarded-for", "192.0.2.9")
            .body(empty())
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tcp_listener_closes_connections_its_address_lists_refuse() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let up = weir_testkit::TcpUpstream::echo("e", false).await.unwrap();
    // The closed listener's own backend: nothing else connects to it, so its count is not
    // raced by the open listener's relays of Weir::start's readiness probes.
    let behind_closed = weir_testkit::TcpUpstream::echo("c", false).await.unwrap();
    let (open, closed) = (free_addr(), free_addr());
    let cfg = format!(
        r#"
[listeners.open]
bind = "{open}"
protocol = "tcp"
pool = "db"
filters = ["local"]

[listeners.closed]
bind = "{closed}"
protocol = "tcp"
pool = "db2"
filters = ["local", "no-loopback"]

[pools.db]
endpoints = [{{ addr = "{}" }}]
[pools.db.health]
check = "none"

[pools.db2]
endpoints = [{{ addr = "{}" }}]
[pools.db2.health]
check = "none"

[filters.local]
kind = "ip_allow"
addresses = ["127.0.0.0/8", "::1"]

[filters.no-loopback]
kind = "ip_deny"
addresses = ["127.0.0.0/8", "::1"]
"#,
        up.addr(),
        behind_closed.addr()
    );
    let w = Weir::start(&cfg, &[open, closed]);
    let mut s = tokio::net::TcpStream::connect(open).await.unwrap();
    s.write_all(b"ping").await.unwrap();
    let mut buf = [0u8; 4];
    s.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"ping");
    let prefix = "weir_requests_total{listener=\"closed\",route=\"\",pool=\"db2\",endpoint=\"\",code=\"\",reason=\"forbidden\"}";
    let refused = crate::tls_kit::metric(w.admin, prefix).await;

    let mut s = tokio::net::TcpStream::connect(closed).await.unwrap();
    let mut out = Vec::new();
    let n = tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut out))
        .await
        .expect("the refused connection is closed");
    assert!(n.is_err() || out.is_empty(), "{out:?}");
    assert_eq!(
        behind_closed.connections(),
        0,
        "no refused connection (the probes' or this one) reached the pool"
    );
    // At least one more (a late readiness probe may be counted too).
    let now = crate::tls_kit::wait_metric(w.admin, prefix, refused + 1.0).await;
    assert!(now >= refused + 1.0, "{now} after {refused}");
}
