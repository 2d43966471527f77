//! The `cors` filter through the real binary: preflights answered by weir (never forwarded),
//! allowed or refused by origin, method and headers, counted under their reasons; actual
//! answers given the filter's CORS fields in place of the upstream's, `Vary: Origin` merged;
//! requests without `Origin` untouched; `weir check` errors at line:column.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use weir_testkit::client::{self, Resp};
use weir_testkit::HttpUpstream;

use crate::common::{endpoints, free_addr, Weir};
use crate::filters_error_pages::raw_upstream;

const ALLOW_FIELDS: [&str; 5] = [
    "access-control-allow-origin",
    "access-control-allow-methods",
    "access-control-allow-headers",
    "access-control-allow-credentials",
    "access-control-max-age",
];

fn config(listen: SocketAddr, app: SocketAddr, raw: SocketAddr) -> String {
    format!(
        r#"
[listeners.web]
bind = "{listen}"

[routes.api]
listener = "web"
host = "api.test"
pool = "app"
filters = ["cors"]

[routes.open]
listener = "web"
host = "open.test"
pool = "app"
filters = ["cors-any"]

[routes.raw]
listener = "web"
host = "raw.test"
pool = "raw"
filters = ["cors"]

[filters.cors]
kind = "cors"
allow_origins = ["https://app.example.com", "https://*.example.org"]
allow_methods = ["GET", "POST", "PUT"]
allow_headers = ["X-Token"]
expose_headers = ["X-Total", "X-Page"]
max_age = "10m"
allow_credentials = true

[filters.cors-any]
kind = "cors"
allow_origins = ["*"]
allow_headers = ["*"]

[pools.app]
{}
[pools.raw]
{}
"#,
        endpoints(&[(app, 1)]),
        endpoints(&[(raw, 1)]),
    )
}

async fn send(listen: SocketAddr, method: &str, host: &str, headers: &[(&str, &str)]) -> Resp {
    let mut req = Request::builder()
        .method(method)
        .uri("/things")
        .header("host", host);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    client::send(listen, req.body(Full::new(Bytes::new())).unwrap())
        .await
        .unwrap()
}

async fn preflight(
    listen: SocketAddr,
    host: &str,
    origin: &str,
    method: &str,
    headers: Option<&str>,
) -> Resp {
    let mut h = vec![
        ("origin", origin),
        ("access-control-request-method", method),
    ];
    if let Some(v) = headers {
        h.push(("access-control-request-headers", v));
    }
    send(listen, "OPTIONS", host, &h).await
}

fn refused(r: &Resp) {
    assert_eq!(r.status, 204);
    assert_eq!(r.header("x-weir-reason"), Some("cors_refused"));
    for f in ALLOW_FIELDS {
        assert_eq!(r.header(f), None, "{f} on a refused preflight");
    }
    assert_eq!(
        r.header("vary"),
        Some("Origin, Access-Control-Request-Method, Access-Control-Request-Headers")
    );
}

/// The count of `weir_requests_total` lines with this route, code and reason, once it
/// reaches `want` (requests are counted when their answer is done, just after the client has
/// it).
async fn wait_count(admin: SocketAddr, route: &str, code: u16, reason: &str, want: f64) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = client::get(admin, "/metrics").await.unwrap().text();
        let n: f64 = text
            .lines()
            .filter(|l| {
                l.starts_with("weir_requests_total{")
                    && l.contains(&format!("route=\"{route}\""))
                    && l.contains(&format!("code=\"{code}\""))
                    && l.contains(&format!("reason=\"{reason}\""))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        if n >= want || Instant::now() > deadline {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn preflights_are_answered_by_weir_allowed_or_refused() {
    let app = HttpUpstream::spawn("app").await.unwrap();
    let raw = raw_upstream(|_| (200, "", "ok\n")).await;
    let listen = free_addr();
    let w = Weir::start(&config(listen, app.addr(), raw.addr), &[listen]);

    // Allowed: the origin echoed (credentials: never `*`), the methods, the requested
    // headers (a safelisted one needs no listing), max-age in seconds.
    let r = preflight(
        listen,
        "api.test",
        "https://app.example.com",
        "PUT",
        Some("X-Token, Content-Type"),
    )
    .await;
    assert_eq!(r.status, 204);
    assert!(r.body.is_empty());
    assert_eq!(r.header("x-weir-reason"), Some("cors_preflight"));
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://app.example.com")
    );
    assert_eq!(
        r.header("access-control-allow-methods"),
        Some("GET, POST, PUT")
    );
    assert_eq!(
        r.header("access-control-allow-headers"),
        Some("x-token, content-type")
    );
    assert_eq!(r.header("access-control-max-age"), Some("600"));
    assert_eq!(r.header("access-control-allow-credentials"), Some("true"));
    assert_eq!(
        r.header("vary"),
        Some("Origin, Access-Control-Request-Method, Access-Control-Request-Headers")
    );

    // A subdomain at any depth of the wildcard origin, echoed as sent.
    let r = preflight(listen, "api.test", "https://a.b.example.org", "GET", None).await;
    assert_eq!(r.header("x-weir-reason"), Some("cors_preflight"));
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://a.b.example.org")
    );
    assert_eq!(r.header("access-control-allow-headers"), None);

    // Refused: the origin (the wildcard's apex, another scheme, another site), the method,
    // a header.
    for origin in [
        "https://example.org",
        "http://app.example.com",
        "https://evil.example.com",
    ] {
        refused(&preflight(listen, "api.test", origin, "GET", None).await);
    }
    refused(
        &preflight(
            listen,
            "api.test",
            "https://app.example.com",
            "DELETE",
            None,
        )
        .await,
    );
    refused(
        &preflight(
            listen,
            "api.test",
            "https://app.example.com",
            "GET",
            Some("x-token, x-other"),
        )
        .await,
    );

    // `"*"` without credentials: `*`, and any requested header.
    let r = preflight(
        listen,
        "open.test",
        "https://any.site",
        "POST",
        Some("X-Custom"),
    )
    .await;
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    assert_eq!(r.header("access-control-allow-headers"), Some("x-custom"));
    assert_eq!(r.header("access-control-allow-credentials"), None);

    // No preflight reached the backend.
    assert_eq!(app.requests(), 0);
    // Counted as weir's own answers, under their reasons.
    assert_eq!(
        wait_count(w.admin, "api", 204, "cors_preflight", 2.0).await,
        2.0
    );
    assert_eq!(
        wait_count(w.admin, "api", 204, "cors_refused", 5.0).await,
        5.0
    );
    assert_eq!(
        wait_count(w.admin, "open", 204, "cors_preflight", 1.0).await,
        1.0
    );

    // An OPTIONS without Access-Control-Request-Method is not a preflight: forwarded.
    let r = send(
        listen,
        "OPTIONS",
        "api.test",
        &[("origin", "https://app.example.com")],
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-upstream"), Some("app"));
    assert_eq!(app.requests(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn actual_answers_get_the_filters_fields_and_vary_origin() {
    let app = HttpUpstream::spawn("app").await.unwrap();
    // A backend with CORS fields of its own and a Vary: the filter's replace them.
    let raw = raw_upstream(|_| {
        (
            200,
            "vary: Accept-Encoding\r\naccess-control-allow-origin: *\r\naccess-control-expose-headers: X-Secret\r\n",
            "ok\n",
        )
    })
    .await;
    let listen = free_addr();
    let _w = Weir::start(&config(listen, app.addr(), raw.addr), &[listen]);

    let origin = [("origin", "https://app.example.com")];
    let r = send(listen, "GET", "raw.test", &origin).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "ok\n");
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://app.example.com")
    );
    assert_eq!(r.header("access-control-allow-credentials"), Some("true"));
    assert_eq!(
        r.header("access-control-expose-headers"),
        Some("x-total, x-page")
    );
    assert_eq!(r.headers.get_all("vary").iter().count(), 1);
    assert_eq!(r.header("vary"), Some("Accept-Encoding, Origin"));

    // An origin not allowed: the upstream's CORS fields are gone too, Vary still says Origin.
    let r = send(
        listen,
        "GET",
        "raw.test",
        &[("origin", "https://evil.test")],
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("access-control-allow-origin"), None);
    assert_eq!(r.header("access-control-expose-headers"), None);
    assert_eq!(r.header("vary"), Some("Accept-Encoding, Origin"));

    // A method not allowed gets no CORS fields either (as rs/cors).
    let r = send(listen, "DELETE", "api.test", &origin).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("access-control-allow-origin"), None);

    // No Origin: untouched, the upstream's fields as it sent them.
    let r = send(listen, "GET", "raw.test", &[]).await;
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    assert_eq!(r.header("access-control-expose-headers"), Some("X-Secret"));
    assert_eq!(r.header("vary"), Some("Accept-Encoding"));

    // `"*"` without credentials answers `*`, through to the testkit backend.
    let r = send(
        listen,
        "GET",
        "open.test",
        &[("origin", "https://any.site")],
    )
    .await;
    assert_eq!(r.header("x-upstream"), Some("app"));
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    assert_eq!(r.header("vary"), Some("Origin"));
}

#[test]
fn check_reports_bad_cors_settings_at_line_and_column() {
    let (code, out, err) = crate::check::check_file(
        r#"[listeners.web]
bind = "127.0.0.1:8080"

[pools.app]
endpoints = [{ addr = "127.0.0.1:9001" }]

[routes.api]
listener = "web"
pool = "app"
filters = ["cors"]

[filters.cors]
kind = "cors"
allow_origins = ["*", "https://app.example.com/"]
max_age = "ten minutes"
allow_credentials = true
"#,
    );
    assert_ne!(code, 0);
    let text = err + &out;
    let file = "weir.toml";
    for want in [
        format!("{file}:14:18: error: allow_origins = [\"*\"] cannot be used with allow_credentials = true"),
        format!("{file}:14:23: error: invalid origin \"https://app.example.com/\": an origin has no path"),
        format!("{file}:15:11: error: invalid duration \"ten minutes\""),
    ] {
        assert!(text.contains(&want), "no {want:?} in:\n{text}");
    }
}
