//! Routing: host (exact, wildcard, port ignored), then longest path prefix,
//! then the listener's default pool.

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use weir_testkit::client;
use weir_testkit::HttpUpstream;

use crate::common::{free_addr, Weir};

async fn upstream_for(listen: std::net::SocketAddr, host: &str, path: &str) -> (u16, String) {
    let req = Request::get(path)
        .header("host", host)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let r = client::send(listen, req).await.unwrap();
    (
        r.status.as_u16(),
        r.header("x-upstream").unwrap_or("-").to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn host_then_longest_prefix_then_default() {
    let a = HttpUpstream::spawn("a").await.unwrap();
    let api = HttpUpstream::spawn("api").await.unwrap();
    let b = HttpUpstream::spawn("b").await.unwrap();
    let dflt = HttpUpstream::spawn("default").await.unwrap();
    let listen = free_addr();
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "fallback"

[routes.a]
listener = "web"
host = "a.example.com"
pool = "a"

[routes.a-api]
listener = "web"
host = "a.example.com"
path_prefix = "/api"
pool = "api"

[routes.b]
listener = "web"
host = "*.b.example.com"
pool = "b"

[pools.a]
endpoints = [{{ addr = "{}" }}]
[pools.api]
endpoints = [{{ addr = "{}" }}]
[pools.b]
endpoints = [{{ addr = "{}" }}]
[pools.fallback]
endpoints = [{{ addr = "{}" }}]
"#,
        a.addr(),
        api.addr(),
        b.addr(),
        dflt.addr()
    );
    let _w = Weir::start(&cfg, &[listen]);

    assert_eq!(
        upstream_for(listen, "a.example.com", "/").await,
        (200, "a".into())
    );
    assert_eq!(
        upstream_for(listen, "A.Example.com:8080", "/x").await,
        (200, "a".into())
    );
    assert_eq!(
        upstream_for(listen, "a.example.com", "/api/v1").await,
        (200, "api".into())
    );
    assert_eq!(
        upstream_for(listen, "x.b.example.com", "/").await,
        (200, "b".into())
    );
    assert_eq!(
        upstream_for(listen, "x.y.b.example.com", "/").await,
        (200, "b".into())
    );
    assert_eq!(
        upstream_for(listen, "b.example.com", "/").await,
        (200, "default".into())
    );
    assert_eq!(
        upstream_for(listen, "other.com", "/api").await,
        (200, "default".into())
    );
}
