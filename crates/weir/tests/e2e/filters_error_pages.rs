//! The `error_pages` filter through the real binary: weir's own error answers and upstream
//! ones with a listed status get a file's page or a pool's page (status and other fields
//! kept), problem+json when the client prefers JSON, HEAD without a body, HTTP/2 alike; a
//! failed page fetch, unlisted statuses, gRPC calls and `route_not_found` (no route, so no
//! chain) go out unchanged.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use weir_testkit::client::{self, Resp};
use weir_testkit::HttpUpstream;

use crate::common::{endpoints, free_addr, Weir};

/// A backend that answers each request with `answer(path)`: status, extra header lines (each
/// ending in CRLF) and body; it closes after each answer, and sends no body to a HEAD.
pub struct Raw {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Raw {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub type Answer = fn(&str) -> (u16, &'static str, &'static str);

pub async fn raw_upstream(answer: Answer) -> Raw {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 << 10 {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&head);
                let mut first = text.lines().next().unwrap_or("").split(' ');
                let method = first.next().unwrap_or("");
                let path = first.next().unwrap_or("/");
                let (status, extra, body) = answer(path);
                let mut out = format!(
                    "HTTP/1.1 {status} X\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                if method != "HEAD" {
                    out.push_str(body);
                }
                let _ = s.write_all(out.as_bytes()).await;
                let _ = s.shutdown().await;
            });
        }
    });
    Raw { addr, task }
}

/// The application behind the routes: statuses by path, with fields a page must keep.
fn app(path: &str) -> (u16, &'static str, &'static str) {
    match path {
        "/status/500" => (
            500,
            "retry-after: 7\r\netag: \"v1\"\r\ncontent-type: text/plain\r\n",
            "upstream oops\n",
        ),
        "/status/404" => (404, "content-type: text/plain\r\n", "missing\n"),
        "/status/401" => (
            401,
            "www-authenticate: Basic realm=\"x\"\r\n",
            "who are you\n",
        ),
        "/status/418" => (418, "", "teapot\n"),
        _ => (200, "", "fine\n"),
    }
}

const PAGE: &str = "<!doctype html><h1>Sorry, something broke.</h1>\n";

struct Setup {
    listen: SocketAddr,
    errors: HttpUpstream,
    _app: Raw,
    dir: tempfile::TempDir,
    w: Weir,
}

async fn start() -> Setup {
    let app = raw_upstream(app).await;
    let errors = HttpUpstream::spawn("error-page").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("5xx.html");
    std::fs::write(&page, PAGE).unwrap();
    let listen = free_addr();
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"

[routes.file]
listener = "web"
host = "file.test"
pool = "app"
filters = ["file-pages"]

[routes.empty]
listener = "web"
host = "empty.test"
pool = "empty"
filters = ["file-pages"]

[routes.fetch]
listener = "web"
host = "fetch.test"
pool = "app"
filters = ["pool-pages"]

[routes.broken]
listener = "web"
host = "broken.test"
pool = "app"
filters = ["broken-pages"]

[filters.file-pages]
kind = "error_pages"
statuses = [401, 404, 500, "502-504"]
file = "{}"

[filters.pool-pages]
kind = "error_pages"
statuses = ["500-599"]
pool = "errors"
path = "/pages/{{status}}.html"

[filters.broken-pages]
kind = "error_pages"
statuses = [500]
pool = "errors"
path = "/status/503"

[pools.app]
{}
[pools.app.retry]
attempts = 0

[pools.empty]
endpoints = []

[pools.errors]
{}
"#,
        page.display(),
        endpoints(&[(app.addr, 1)]),
        endpoints(&[(errors.addr(), 1)]),
    );
    let w = Weir::start(&cfg, &[listen]);
    Setup {
        listen,
        errors,
        _app: app,
        dir,
        w,
    }
}

async fn send(
    listen: SocketAddr,
    method: &str,
    host: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Resp {
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", host);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    client::send(listen, req.body(Full::new(Bytes::new())).unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn error_answers_get_the_file_page_with_their_status_and_fields() {
    let s = start().await;
    let get = |host, path| send(s.listen, "GET", host, path, &[]);

    // An upstream 500: the page, with the status and Retry-After kept, the old body's
    // validators and length gone.
    let r = get("file.test", "/status/500").await;
    assert_eq!(r.status, 500);
    assert_eq!(r.text(), PAGE);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(
        r.header("content-length"),
        Some(PAGE.len().to_string().as_str())
    );
    assert_eq!(r.header("retry-after"), Some("7"));
    assert_eq!(r.header("etag"), None);
    // 404 and 401 are listed too; WWW-Authenticate stays.
    let r = get("file.test", "/status/404").await;
    assert_eq!((r.status.as_u16(), r.text().as_str()), (404, PAGE));
    let r = get("file.test", "/status/401").await;
    assert_eq!((r.status.as_u16(), r.text().as_str()), (401, PAGE));
    assert_eq!(r.header("www-authenticate"), Some("Basic realm=\"x\""));
    // Not listed: untouched.
    let r = get("file.test", "/status/418").await;
    assert_eq!((r.status.as_u16(), r.text().as_str()), (418, "teapot\n"));
    // A success: untouched.
    let r = get("file.test", "/").await;
    assert_eq!((r.status.as_u16(), r.text().as_str()), (200, "fine\n"));

    // weir's own 503 (a pool without endpoints): the page, x-weir-reason kept.
    let r = get("empty.test", "/").await;
    assert_eq!(r.status, 503);
    assert_eq!(r.text(), PAGE);
    assert_eq!(r.header("x-weir-reason"), Some("no_healthy_endpoint"));

    // No route, so no chain: weir's 404 route_not_found is its plain answer.
    let r = get("nowhere.test", "/").await;
    assert_eq!(r.status, 404);
    assert_eq!(r.header("x-weir-reason"), Some("route_not_found"));
    assert!(r.text().contains("route_not_found"), "{}", r.text());

    // HEAD: the page's fields, no body.
    let r = send(s.listen, "HEAD", "file.test", "/status/500", &[]).await;
    assert_eq!(r.status, 500);
    assert!(r.body.is_empty());
    assert_eq!(
        r.header("content-length"),
        Some(PAGE.len().to_string().as_str())
    );
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));

    // A gRPC call's answer is never touched.
    let r = send(
        s.listen,
        "GET",
        "file.test",
        "/status/500",
        &[("content-type", "application/grpc")],
    )
    .await;
    assert_eq!(r.status, 500);
    assert_eq!(r.text(), "upstream oops\n");
    drop(s.w);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_that_prefers_json_gets_problem_json() {
    let s = start().await;
    let json = [("accept", "application/json, text/plain, */*")];
    let r = send(s.listen, "GET", "empty.test", "/", &json).await;
    assert_eq!(r.status, 503);
    assert_eq!(r.header("content-type"), Some("application/problem+json"));
    assert_eq!(r.header("x-weir-reason"), Some("no_healthy_endpoint"));
    let p: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        p,
        serde_json::json!({
            "type": "about:blank",
            "title": "Service Unavailable",
            "status": 503,
            "detail": "no_healthy_endpoint",
        })
    );
    assert_eq!(
        r.header("content-length"),
        Some(r.body.len().to_string().as_str())
    );
    // An upstream's answer has no weir reason to tell.
    let problem = [("accept", "application/problem+json")];
    let r = send(s.listen, "GET", "file.test", "/status/500", &problem).await;
    assert_eq!(r.status, 500);
    let p: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(p["status"], 500);
    assert_eq!(p["title"], "Internal Server Error");
    assert!(p.get("detail").is_none(), "{p}");
    assert_eq!(r.header("retry-after"), Some("7"));
    // A browser's Accept ranks HTML first: the page.
    let browser = [(
        "accept",
        "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    )];
    let r = send(s.listen, "GET", "file.test", "/status/500", &browser).await;
    assert_eq!(r.text(), PAGE);
    drop(s.w);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pool_page_is_fetched_for_the_status_or_the_answer_goes_out_as_it_was() {
    let s = start().await;
    let r = send(s.listen, "GET", "fetch.test", "/status/500", &[]).await;
    assert_eq!(r.status, 500);
    // The testkit backend answers any other path 200 with its name.
    assert_eq!(r.text(), "error-page\n");
    assert_eq!(r.header("retry-after"), Some("7"));
    let log = s.errors.log();
    let fetched: Vec<&str> = log.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(fetched, ["/pages/500.html"]);
    assert_eq!(log[0].method, http::Method::GET);
    assert_eq!(log[0].headers["host"], "fetch.test");
    // 404 is not listed for this route: untouched, nothing fetched.
    let r = send(s.listen, "GET", "fetch.test", "/status/404", &[]).await;
    assert_eq!((r.status.as_u16(), r.text().as_str()), (404, "missing\n"));
    // The page's pool answers 503: the original answer goes out unchanged.
    let r = send(s.listen, "GET", "broken.test", "/status/500", &[]).await;
    assert_eq!(r.status, 500);
    assert_eq!(r.text(), "upstream oops\n");
    assert_eq!(r.header("etag"), Some("\"v1\""));
    let paths: Vec<String> = s.errors.log().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, ["/pages/500.html", "/status/503"]);
    drop(s.w);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_http2_client_gets_the_page_too() {
    let s = start().await;
    let tcp = tokio::net::TcpStream::connect(s.listen).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut c = client.ready().await.unwrap();
    let req = Request::get("http://file.test/status/500")
        .body(())
        .unwrap();
    let (resp, _) = c.send_request(req, true).unwrap();
    let resp = resp.await.unwrap();
    assert_eq!(resp.status(), 500);
    assert_eq!(resp.headers()["retry-after"], "7");
    assert_eq!(resp.headers()["content-type"], "text/html; charset=utf-8");
    let mut body = resp.into_body();
    let mut got = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        got.extend_from_slice(&chunk);
    }
    assert_eq!(String::from_utf8(got).unwrap(), PAGE);
    drop(s.w);
}

#[test]
fn check_reads_page_files_and_reports_bad_settings_at_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.html");
    std::fs::write(&big, vec![b'x'; (1 << 20) + 1]).unwrap();
    let missing = dir.path().join("missing.html");
    let path = dir.path().join("weir.toml");
    std::fs::write(
        &path,
        format!(
            r#"[listeners.web]
bind = "127.0.0.1:8080"

[pools.app]
endpoints = [{{ addr = "127.0.0.1:9001" }}]

[filters.gone]
kind = "error_pages"
statuses = [500]
file = "{}"

[filters.big]
kind = "error_pages"
statuses = [500]
file = "{}"

[filters.range]
kind = "error_pages"
statuses = ["502-504", "599-500"]
pool = "app"
"#,
            missing.display(),
            big.display()
        ),
    )
    .unwrap();
    let out = std::process::Command::new(crate::common::WEIR)
        .arg("check")
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    let file = path.display().to_string();
    for want in [
        format!(
            "{file}:10:8: error: error page: cannot read {}",
            missing.display()
        ),
        format!("{file}:19:24: error: invalid status: the range \"599-500\" ends before it starts"),
        format!(
            "{file}:15:8: error: error page: {} is larger than 1024 KiB (1048577 bytes)",
            big.display()
        ),
    ] {
        assert!(text.contains(&want), "no {want:?} in:\n{text}");
    }
}

/// The page file is watched: a new one renamed over it is served without a reload, and one
/// that does not read (larger than 1 MiB) is refused with a log line, the page there was
/// staying.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_changed_page_file_is_served_without_a_reload() {
    let s = start().await;
    let page = s.dir.path().join("5xx.html");
    let next = s.dir.path().join("5xx.html.new");
    let body = || async { send(s.listen, "GET", "file.test", "/status/500", &[]).await };
    assert_eq!(body().await.text(), PAGE);

    std::fs::write(&next, "<h1>Back soon.</h1>\n").unwrap();
    std::fs::rename(&next, &page).unwrap();
    let line =
        s.w.wait_log(0, "error page reloaded", Duration::from_secs(20));
    assert!(line.contains("20 bytes"), "{line}");
    let r = body().await;
    assert_eq!(r.status, 500);
    assert_eq!(r.text(), "<h1>Back soon.</h1>\n");

    let from = s.w.log_lines();
    std::fs::write(&next, vec![b'x'; (1 << 20) + 1]).unwrap();
    std::fs::rename(&next, &page).unwrap();
    let line =
        s.w.wait_log(from, "error page not reloaded", Duration::from_secs(20));
    assert!(line.contains("larger than 1024 KiB"), "{line}");
    assert_eq!(body().await.text(), "<h1>Back soon.</h1>\n");
}
