//! The compress filter through the real binary: gzip, brotli and zstd
//! decoded by the real curl (`--compressed`) and by Python's decoders (`gzip`, `brotli`,
//! `zstandard`; Debian's python3-brotli and python3-zstandard, installed by test.sh), over
//! HTTP/1.1 and HTTP/2; q-values; what is left alone; Vary and ETags; streaming (an event
//! reaches the client before the upstream sends the next); a body cut short stays cut.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::pin::Pin;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use hyper::body::{Body, Frame, Incoming};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Notify};

use crate::common::{free_addr, Weir};

/// 1 MiB of text that compresses as pages do (not one repeated byte).
fn page() -> Bytes {
    let mut s = String::with_capacity(1 << 20);
    let mut i = 0u64;
    while s.len() < 1 << 20 {
        i += 1;
        s.push_str(&format!(
            "<li class=\"item\"><a href=\"/p/{}\">Product {i}</a><span>{}.{:02}</span></li>\n",
            i * 7919 % 10007,
            i * 37 % 500,
            i % 100
        ));
    }
    s.truncate(1 << 20);
    Bytes::from(s)
}

// ---- the upstream ------------------------------------------------------------------------

/// A body fed by a task: frames as they are sent, an error as a cut.
struct Fed(mpsc::Receiver<Result<Frame<Bytes>, std::io::Error>>);

impl Body for Fed {
    type Data = Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        self.0.poll_recv(cx)
    }
}

struct Upstream {
    addr: SocketAddr,
    /// `/sse` sends its second event when this is notified.
    release: Arc<Notify>,
    /// `/cut` breaks its connection when this is notified.
    cut: Arc<Notify>,
}

/// Serves by the path's last segment (so a route prefix does not matter):
/// - `page?n=&ct=&cc=&ce=&vary=&status=`: `n` bytes of `page()` (1 MiB) in 16 KiB frames with
///   Content-Length, ETag `"v1"`, Accept-Ranges, the type `ct` (text/html), Cache-Control
///   `cc`, Content-Encoding `ce`, Vary `vary`, the status (a 206 gets a Content-Range);
/// - `chunked`: the whole page in 16 KiB frames, no length;
/// - `sse`: `text/event-stream`, one event, then a second once `release` is notified;
/// - `cut`: announces the page's length, sends half, then breaks the connection once `cut`
///   is notified.
async fn upstream() -> Upstream {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let release = Arc::new(Notify::new());
    let cut = Arc::new(Notify::new());
    let signals = (release.clone(), cut.clone());
    let page = page();
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            let (signals, page) = (signals.clone(), page.clone());
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req| {
                    let (signals, page) = (signals.clone(), page.clone());
                    async move { Ok::<_, Infallible>(answer(req, signals, page)) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    Upstream { addr, release, cut }
}

fn answer(
    req: Request<Incoming>,
    (release, cut): (Arc<Notify>, Arc<Notify>),
    page: Bytes,
) -> Response<Fed> {
    let q: HashMap<String, String> = req
        .uri()
        .query()
        .unwrap_or("")
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.replace("%20", " ")))
        .collect();
    let name = req
        .uri()
        .path()
        .rsplit('/')
        .next()
        .unwrap_or("")
        .to_string();
    let (tx, rx) = mpsc::channel(4);
    let mut resp = Response::new(Fed(rx));
    let h = resp.headers_mut();
    let send = |body: Bytes, tx: mpsc::Sender<_>| {
        tokio::spawn(async move {
            for c in body.chunks(16 * 1024) {
                let _ = tx.send(Ok(Frame::data(body.slice_ref(c)))).await;
            }
        });
    };
    match name.as_str() {
        "page" => {
            let n: usize = q.get("n").map_or(page.len(), |n| n.parse().unwrap());
            let ct = q.get("ct").map_or("text/html; charset=utf-8", |s| s);
            h.insert("content-type", ct.parse().unwrap());
            h.insert("content-length", n.into());
            h.insert("etag", "\"v1\"".parse().unwrap());
            h.insert("accept-ranges", "bytes".parse().unwrap());
            for (k, field) in [
                ("cc", "cache-control"),
                ("ce", "content-encoding"),
                ("vary", "vary"),
            ] {
                if let Some(v) = q.get(k) {
                    h.insert(field, v.parse().unwrap());
                }
            }
            if let Some(s) = q.get("status") {
                *resp.status_mut() = s.parse::<u16>().unwrap().try_into().unwrap();
                if s == "206" {
                    let v = format!("bytes 0-{}/{}", n - 1, page.len());
                    resp.headers_mut()
                        .insert("content-range", v.parse().unwrap());
                }
                if s == "204" || s == "304" {
                    resp.headers_mut().remove("content-length");
                    return resp;
                }
            }
            send(page.slice(..n), tx);
        }
        "chunked" => {
            h.insert("content-type", "application/json".parse().unwrap());
            send(page, tx);
        }
        "sse" => {
            h.insert("content-type", "text/event-stream".parse().unwrap());
            h.insert("cache-control", "no-cache".parse().unwrap());
            tokio::spawn(async move {
                let _ = tx.send(Ok(Frame::data("data: one\n\n".into()))).await;
                release.notified().await;
                let _ = tx.send(Ok(Frame::data("data: two\n\n".into()))).await;
            });
        }
        "cut" => {
            h.insert("content-type", "text/plain".parse().unwrap());
            h.insert("content-length", page.len().into());
            tokio::spawn(async move {
                let _ = tx.send(Ok(Frame::data(page.slice(..page.len() / 2)))).await;
                cut.notified().await;
                let _ = tx.send(Err(std::io::Error::other("cut"))).await;
            });
        }
        _ => *resp.status_mut() = http::StatusCode::NOT_FOUND,
    }
    resp
}

// ---- weir and the clients ----------------------------------------------------------------

/// weir with the default compress filter on `/`, and one preferring gzip, then br, with
/// `min_bytes = 0`, on `/pref/`; an access log.
fn start(up: &Upstream) -> (Weir, SocketAddr, tempfile::TempDir) {
    let listen = free_addr();
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
access_log = "{}"

[routes.all]
listener = "web"
pool = "app"
filters = ["gz"]

[routes.pref]
listener = "web"
path_prefix = "/pref/"
pool = "app"
filters = ["gz-first"]

[pools.app]
endpoints = [{{ addr = "{}" }}]

[filters.gz]
kind = "compress"

[filters.gz-first]
kind = "compress"
encodings = ["gzip", "br"]
gzip_level = 1
min_bytes = 0
"#,
        dir.path().join("access.log").display(),
        up.addr
    );
    (Weir::start(&cfg, &[listen]), listen, dir)
}

struct Got {
    ok: bool,
    /// Lower-cased header lines of the (last) response head.
    head: String,
    body: Vec<u8>,
}

impl Got {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    }
    fn count(&self, name: &str) -> usize {
        self.head
            .lines()
            .filter(|l| l.split(':').next() == Some(name))
            .count()
    }
}

/// curl `url` with `args`: the head (lower-cased names) and the body as received.
fn curl(url: &str, args: &[&str]) -> Got {
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body");
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "30", "-D", "-", "-o"])
        .arg(&body)
        .args(args)
        .arg(url)
        .output()
        .expect("curl runs");
    let head = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| match l.split_once(':') {
            Some((k, v)) => format!("{}:{v}", k.to_ascii_lowercase()),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    Got {
        ok: out.status.success(),
        head,
        body: std::fs::read(&body).unwrap_or_default(),
    }
}

/// `data` decoded with Python's decoder for `enc`.
fn python_decode(enc: &str, data: &[u8]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (dir.path().join("in"), dir.path().join("out"));
    std::fs::write(&src, data).unwrap();
    let script = r#"
import sys
enc, src, dst = sys.argv[1:]
data = open(src, 'rb').read()
if enc == 'gzip':
    import gzip; out = gzip.decompress(data)
elif enc == 'br':
    import brotli; out = brotli.decompress(data)
elif enc == 'zstd':
    import zstandard; out = zstandard.ZstdDecompressor().decompressobj().decompress(data)
open(dst, 'wb').write(out)
"#;
    let st = Command::new("python3")
        .args(["-c", script, enc])
        .arg(&src)
        .arg(&dst)
        .status()
        .expect("python3 runs");
    assert!(st.success(), "python could not decode {enc}");
    std::fs::read(dst).unwrap()
}

fn same(a: &[u8], b: &[u8], what: &str) {
    assert!(
        a == b,
        "{what}: {} bytes decoded, {} expected",
        a.len(),
        b.len()
    );
}

const ENCODINGS: [&str; 3] = ["gzip", "br", "zstd"];

// ---- the tests ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_encoding_round_trips_over_http1_and_http2() {
    let up = upstream().await;
    let (_w, listen, dir) = start(&up);
    let page = page();
    for proto in ["--http1.1", "--http2-prior-knowledge"] {
        for enc in ENCODINGS {
            for path in ["/page", "/chunked"] {
                let url = format!("http://{listen}{path}");
                let what = format!("{enc} {path} {proto}");
                let ae = format!("accept-encoding: {enc}");
                let raw = curl(&url, &[proto, "-H", &ae]);
                assert!(raw.ok, "{what}: {}", raw.head);
                assert_eq!(
                    raw.header("content-encoding").as_deref(),
                    Some(enc),
                    "{what}"
                );
                assert_eq!(raw.header("vary").as_deref(), Some("Accept-Encoding"));
                assert_eq!(raw.header("content-length"), None, "{what}");
                assert_eq!(raw.header("accept-ranges"), None, "{what}");
                if path == "/page" {
                    assert_eq!(raw.header("etag").as_deref(), Some("W/\"v1\""), "{what}");
                }
                assert!(
                    raw.body.len() < page.len() / 4,
                    "{what}: {}",
                    raw.body.len()
                );
                same(&python_decode(enc, &raw.body), &page, &what);
                // curl's own decoder, asking for this coding only.
                let decoded = curl(&url, &[proto, "--compressed", "-H", &ae]);
                same(&decoded.body, &page, &format!("curl --compressed {what}"));
            }
        }
    }
    // What any client gets with a plain `--compressed` (which offers all three).
    let got = curl(&format!("http://{listen}/page"), &["--compressed"]);
    assert_eq!(got.header("content-encoding").as_deref(), Some("zstd"));
    same(&got.body, &page, "--compressed");

    // The access log counts the bytes the client got, not the upstream's.
    let raw = curl(
        &format!("http://{listen}/page?n=300000"),
        &["-H", "accept-encoding: gzip"],
    );
    let log = dir.path().join("access.log");
    let sent = raw.body.len().to_string();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.contains("n=300000")) {
            assert!(line.contains(&format!("\"bytes\":{sent}")), "{line}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no log line: {text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn q_values_and_preferences_choose() {
    let up = upstream().await;
    let (_w, listen, _dir) = start(&up);
    let coding = |path: &str, ae: &str| {
        let g = curl(
            &format!("http://{listen}{path}"),
            &["-H", &format!("accept-encoding: {ae}")],
        );
        assert!(g.ok);
        assert_eq!(g.header("vary").as_deref(), Some("Accept-Encoding"), "{ae}");
        g.header("content-encoding")
    };
    let cases: &[(&str, &str, Option<&str>)] = &[
        ("/page", "gzip;q=0.5, br;q=0.9", Some("br")),
        ("/page", "br;q=0.5, gzip;q=0.9", Some("gzip")),
        ("/page", "gzip, br, zstd", Some("zstd")),
        ("/pref/page", "gzip, br, zstd", Some("gzip")),
        ("/pref/page", "zstd", None),
        ("/page", "deflate, br", Some("br")),
        ("/page", "*", Some("zstd")),
        ("/page", "*;q=0.5, zstd;q=0", Some("br")),
        ("/page", "gzip;q=0, br;q=0, zstd;q=0", None),
        ("/page", "*;q=0", None),
        ("/page", "gzip;q=0.5, identity", None),
        ("/page", "identity", None),
        ("/page", "", None),
    ];
    for (path, ae, want) in cases {
        assert_eq!(coding(path, ae).as_deref(), *want, "{path} {ae:?}");
    }
    // Not compressed: exactly the upstream's response, ETag strong.
    let g = curl(
        &format!("http://{listen}/page"),
        &["-H", "accept-encoding: identity"],
    );
    same(&g.body, &page(), "identity");
    assert_eq!(g.header("content-length").as_deref(), Some("1048576"));
    assert_eq!(g.header("etag").as_deref(), Some("\"v1\""));
    // No Accept-Encoding at all: nothing compressed.
    let g = curl(&format!("http://{listen}/page"), &[]);
    assert_eq!(g.header("content-encoding"), None);
    same(&g.body, &page(), "no accept-encoding");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn left_alone_where_compressing_would_break_things() {
    let up = upstream().await;
    let (_w, listen, _dir) = start(&up);
    let ae = "accept-encoding: gzip, br, zstd";
    let get = |path: &str, extra: &[&str]| {
        let mut args = vec!["-H", ae];
        args.extend_from_slice(extra);
        curl(&format!("http://{listen}{path}"), &args)
    };
    // (path, extra curl args, whether Vary is added: the response could have been compressed)
    let cases: &[(&str, &[&str], bool)] = &[
        ("/page?cc=public,%20no-transform", &[], false),
        ("/page?ce=gzip", &[], false),
        ("/page?n=1023", &[], false),
        ("/page?ct=image/png", &[], false),
        ("/page?n=2000&status=206", &[], false),
        ("/page", &["-H", "range: bytes=0-99"], true),
        ("/page?status=204", &[], false),
        ("/page?status=304", &[], false),
    ];
    for (path, extra, vary) in cases {
        let g = get(path, extra);
        assert!(g.ok, "{path}: {}", g.head);
        let what = format!("{path} {extra:?}: {}", g.head);
        match *path {
            "/page?ce=gzip" => assert_eq!(g.header("content-encoding").as_deref(), Some("gzip")),
            _ => assert_eq!(g.header("content-encoding"), None, "{what}"),
        }
        assert_eq!(g.header("vary").is_some(), *vary, "{what}");
        if !path.contains("status=20") && !path.contains("304") {
            assert_eq!(g.header("etag").as_deref(), Some("\"v1\""), "{what}");
            let n: usize = g.header("content-length").unwrap().parse().unwrap();
            assert_eq!(g.body.len(), n, "{what}");
            same(&g.body, &page()[..n], &what);
        }
    }
    // HEAD: the head as the upstream sent it.
    let g = get("/page", &["-I"]);
    assert_eq!(g.header("content-encoding"), None, "{}", g.head);
    assert_eq!(g.header("content-length").as_deref(), Some("1048576"));
    // min_bytes = 0 compresses the small one on /pref/.
    let g = get("/pref/page?n=10", &[]);
    assert_eq!(g.header("content-encoding").as_deref(), Some("gzip"));
    same(&python_decode("gzip", &g.body), &page()[..10], "n=10");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn vary_is_merged_into_the_upstreams() {
    let up = upstream().await;
    let (_w, listen, _dir) = start(&up);
    for ae in ["gzip", "identity"] {
        let g = curl(
            &format!("http://{listen}/page?vary=Origin"),
            &["-H", &format!("accept-encoding: {ae}")],
        );
        assert_eq!(g.count("vary"), 1, "{}", g.head);
        assert_eq!(g.header("vary").as_deref(), Some("Origin, Accept-Encoding"));
    }
    let g = curl(
        &format!("http://{listen}/page?vary=Accept-Encoding"),
        &["-H", "accept-encoding: gzip"],
    );
    assert_eq!(g.header("vary").as_deref(), Some("Accept-Encoding"));
    assert_eq!(g.count("vary"), 1);
}

/// The upstream sends one event and waits: the client must see it (decoded) before the
/// upstream sends the second, which it does only once the first arrived.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn events_stream_through_the_encoder() {
    let up = upstream().await;
    let (_w, listen, _dir) = start(&up);
    for proto in ["--http1.1", "--http2-prior-knowledge"] {
        for enc in ENCODINGS {
            let what = format!("{enc} {proto}");
            let mut child = Command::new("curl")
                .args([
                    "-sSN",
                    "--max-time",
                    "30",
                    "--compressed",
                    "-D",
                    "/dev/stderr",
                ])
                .args([proto, "-H", &format!("accept-encoding: {enc}")])
                .arg(format!("http://{listen}/sse"))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut out = BufReader::new(child.stdout.take().unwrap());
            let first = tokio::task::spawn_blocking(move || {
                let mut line = String::new();
                out.read_line(&mut line).unwrap();
                (line, out)
            });
            let (line, mut out) = tokio::time::timeout(Duration::from_secs(20), first)
                .await
                .unwrap_or_else(|_| panic!("{what}: the first event did not come through"))
                .unwrap();
            assert_eq!(line, "data: one\n", "{what}");
            up.release.notify_one();
            let rest = tokio::task::spawn_blocking(move || {
                let mut rest = String::new();
                std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
                rest
            })
            .await
            .unwrap();
            assert_eq!(rest, "\ndata: two\n\n", "{what}");
            let st = child.wait().unwrap();
            let mut head = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut head).unwrap();
            assert!(st.success(), "{what}: {head}");
            assert!(
                head.to_ascii_lowercase()
                    .contains(&format!("content-encoding: {enc}")),
                "{what}: {head}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_body_cut_short_stays_cut() {
    let up = upstream().await;
    let (_w, listen, dir) = start(&up);
    for proto in ["--http1.1", "--http2-prior-knowledge"] {
        // The upstream cuts only once the client has the head: weir had it and began.
        let mut child = Command::new("curl")
            .args([
                "-sS",
                "--max-time",
                "30",
                "-D",
                "/dev/stderr",
                "-o",
                "/dev/null",
            ])
            .args([proto, "-H", "accept-encoding: gzip"])
            .arg(format!("http://{listen}/cut"))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let head = tokio::task::spawn_blocking(move || {
            let mut head = String::new();
            while err.read_line(&mut head).unwrap() > 0 && !head.ends_with("\r\n\r\n") {}
            (head, err)
        });
        let (head, mut err) = tokio::time::timeout(Duration::from_secs(20), head)
            .await
            .expect("the head came through")
            .unwrap();
        assert!(
            head.to_ascii_lowercase().contains("content-encoding: gzip"),
            "{proto}: {head}"
        );
        up.cut.notify_one();
        let st = child.wait().unwrap();
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
        assert!(!st.success(), "{proto}: a cut body ended cleanly: {rest}");
    }
    let log = dir.path().join("access.log");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.lines().filter(|l| l.contains("/cut")).count() == 2 {
            assert!(
                text.lines()
                    .filter(|l| l.contains("/cut"))
                    .all(|l| l.contains("upstream_reset")),
                "{text}"
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no log lines: {text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
