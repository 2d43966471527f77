//! `forward_auth` filters through the real binary, against a small auth service (a hyper
//! server here) that answers by the `Authorization` it gets, counts its calls, records
//! what it was sent, and can hang: 2xx continues with the chosen fields copied (forged
//! ones removed), 401/403/302 go back as sent, a hang, a 5xx or a pool that is down fail
//! closed with 503 `auth_unavailable`, positive answers are cached for `cache_ttl`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Request, Response};
use http_body::Frame;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use weir_testkit::client::{self, Resp};
use weir_testkit::HttpUpstream;

use crate::common::{free_addr, Weir};

/// What the auth service was asked.
#[derive(Clone, Debug)]
pub struct Call {
    pub method: String,
    pub uri: String,
    pub headers: HeaderMap,
    pub body_len: usize,
}

/// The auth service: by `Authorization`,
/// - `Bearer good` (or `Cookie: session=good`): 200 with `X-User: alice`, `X-Groups`
///   twice, `X-Other`;
/// - `Bearer forbidden`: 403 with a body and `X-Why`;
/// - `Bearer login`: 302 to `/login`;
/// - `Bearer hang`: never answers;
/// - `Bearer fail`: 500;
/// - `Bearer big`: 401 with a 100 KiB body;
/// - `Bearer big-yes`: 200 with `X-User` and a 100 KiB body;
/// - `Bearer cut-yes`: 200 with `X-User`, announcing 100 bytes of body, 10 sent, then the
///   connection cut;
/// - `Bearer slow-yes`: 200 with `X-User` at once, a body that never ends;
/// - anything else: 401 with `WWW-Authenticate: Bearer` and a body.
pub struct AuthService {
    pub addr: SocketAddr,
    calls: Arc<Mutex<Vec<Call>>>,
    count: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for AuthService {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl AuthService {
    pub async fn spawn() -> AuthService {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let calls = Arc::new(Mutex::new(Vec::new()));
        let count = Arc::new(AtomicU64::new(0));
        let (c, n) = (calls.clone(), count.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let (c, n) = (c.clone(), n.clone());
                tokio::spawn(async move {
                    let svc =
                        hyper::service::service_fn(move |req| answer(req, c.clone(), n.clone()));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), svc)
                        .await;
                });
            }
        });
        AuthService {
            addr,
            calls,
            count,
            task,
        }
    }

    pub fn calls(&self) -> u64 {
        self.count.load(Relaxed)
    }

    pub fn last(&self) -> Call {
        self.calls.lock().unwrap().last().cloned().expect("a call")
    }
}

async fn answer(
    req: Request<Incoming>,
    calls: Arc<Mutex<Vec<Call>>>,
    count: Arc<AtomicU64>,
) -> Result<Response<AuthBody>, Infallible> {
    let (parts, body) = req.into_parts();
    let body_len = body.collect().await.map_or(0, |b| b.to_bytes().len());
    calls.lock().unwrap().push(Call {
        method: parts.method.to_string(),
        uri: parts.uri.to_string(),
        headers: parts.headers.clone(),
        body_len,
    });
    count.fetch_add(1, Relaxed);
    let auth = parts
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let cookie = parts
        .headers
        .get("cookie")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let r = Response::builder();
    let yes = || Response::builder().status(200).header("x-user", "alice");
    let stream = |chunks: Vec<Result<Bytes, std::io::Error>>, end: bool| {
        use futures_util::StreamExt;
        let s = futures_util::stream::iter(chunks.into_iter().map(|c| c.map(Frame::data)));
        let s = match end {
            true => s.boxed(),
            false => s.chain(futures_util::stream::pending()).boxed(),
        };
        BodyExt::boxed_unsync(StreamBody::new(s))
    };
    match auth {
        "Bearer big-yes" => {
            return Ok(yes()
                .body(full(Bytes::from(vec![b'x'; 100 << 10])))
                .unwrap())
        }
        "Bearer cut-yes" => {
            let cut = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "cut");
            return Ok(yes()
                .header("content-length", "100")
                .body(stream(
                    vec![Ok(Bytes::from_static(b"0123456789")), Err(cut)],
                    true,
                ))
                .unwrap());
        }
        "Bearer slow-yes" => {
            let first = Ok(Bytes::from_static(b"still thinking"));
            return Ok(yes().body(stream(vec![first], false)).unwrap());
        }
        _ => {}
    }
    let r = match auth {
        "Bearer good" => r
            .status(200)
            .header("x-user", "alice")
            .header("x-groups", "admin")
            .header("x-groups", "staff")
            .header("x-other", "not copied")
            .body(Full::new(Bytes::from_static(b"ok"))),
        _ if cookie == "session=good" => r
            .status(204)
            .header("x-user", "cookie-user")
            .body(Full::default()),
        "Bearer forbidden" => r
            .status(403)
            .header("x-why", "not in the group")
            .header("content-type", "text/plain")
            .body(Full::new(Bytes::from_static(b"you shall not pass\n"))),
        "Bearer login" => r
            .status(302)
            .header("location", "/login")
            .body(Full::default()),
        "Bearer hang" => {
            std::future::pending::<()>().await;
            unreachable!()
        }
        "Bearer fail" => r.status(500).body(Full::new(Bytes::from_static(b"oops"))),
        "Bearer big" => r
            .status(401)
            .body(Full::new(Bytes::from(vec![b'x'; 100 << 10]))),
        _ => r
            .status(401)
            .header("www-authenticate", "Bearer realm=\"sso\"")
            .body(Full::new(Bytes::from_static(b"who are you?\n"))),
    };
    Ok(r.unwrap().map(full_body))
}

type AuthBody = http_body_util::combinators::UnsyncBoxBody<Bytes, std::io::Error>;

fn full(b: Bytes) -> AuthBody {
    full_body(Full::new(b))
}

fn full_body(b: Full<Bytes>) -> AuthBody {
    BodyExt::boxed_unsync(b.map_err(|never| match never {}))
}

async fn get(listen: SocketAddr, host: &str, path: &str, headers: &[(&str, &str)]) -> Resp {
    let mut req = Request::get(path).header("host", host);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    client::send(listen, req.body(Full::new(Bytes::new())).unwrap())
        .await
        .unwrap()
}

/// The upstream's `/headers` view: every value of `name`.
fn values(r: &Resp, name: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(&r.text()).unwrap_or_else(|_| panic!("{}", r.text()));
    v["headers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p[0] == name)
        .map(|p| p[1].as_str().unwrap().to_string())
        .collect()
}

fn header(h: &HeaderMap, name: &str) -> Option<String> {
    h.get(name).map(|v| v.to_str().unwrap().to_string())
}

/// weir with routes by host: `app.test` (no cache, timeout 1s), `cached.test` (cache_ttl
/// 1s), `down.test` (an auth pool nobody listens on).
pub fn config(listen: SocketAddr, up: &HttpUpstream, auth: SocketAddr, log: &str) -> String {
    let dead = free_addr();
    format!(
        r#"
[listeners.web]
bind = "{listen}"
{log}

[routes.app]
listener = "web"
host = "app.test"
pool = "app"
filters = ["fa"]

[routes.cached]
listener = "web"
host = "cached.test"
pool = "app"
filters = ["fa-cached"]

[routes.down]
listener = "web"
host = "down.test"
pool = "app"
filters = ["fa-down"]

[pools.app]
endpoints = [{{ addr = "{}" }}]

[pools.auth]
endpoints = [{{ addr = "{auth}" }}]

[pools.auth-down]
endpoints = [{{ addr = "{dead}" }}]

[filters.fa]
kind = "forward_auth"
pool = "auth"
path = "/verify?app=shop"
response_headers = ["X-User", "X-Groups"]
timeout = "1s"

[filters.fa-cached]
kind = "forward_auth"
pool = "auth"
path = "/verify"
response_headers = ["X-User"]
cache_ttl = "1s"
cache_key = ["Authorization"]

[filters.fa-down]
kind = "forward_auth"
pool = "auth-down"
timeout = "1s"
"#,
        up.addr(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_yes_continues_with_the_copied_fields() {
    let up = HttpUpstream::spawn("app").await.unwrap();
    let auth = AuthService::spawn().await;
    let listen = free_addr();
    let _w = Weir::start(&config(listen, &up, auth.addr, ""), &[listen]);

    let r = get(
        listen,
        "app.test",
        "/headers?q=1",
        &[
            ("authorization", "Bearer good"),
            ("cookie", "theme=dark"),
            ("x-secret", "not for the auth service"),
            // Forged: only the auth service says who the user is.
            ("x-user", "root"),
            ("x-groups", "wheel"),
        ],
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(values(&r, "x-user"), ["alice"]);
    assert_eq!(values(&r, "x-groups"), ["admin", "staff"]);
    assert!(values(&r, "x-other").is_empty());
    assert_eq!(values(&r, "authorization"), ["Bearer good"]);

    // What the auth service was asked.
    let c = auth.last();
    assert_eq!(
        (c.method.as_str(), c.uri.as_str()),
        ("GET", "/verify?app=shop")
    );
    assert_eq!(c.body_len, 0);
    let h = &c.headers;
    assert_eq!(header(h, "authorization").as_deref(), Some("Bearer good"));
    assert_eq!(header(h, "cookie").as_deref(), Some("theme=dark"));
    assert_eq!(header(h, "x-secret"), None);
    assert_eq!(
        header(h, "x-user"),
        None,
        "forged fields are not sent either"
    );
    assert_eq!(header(h, "x-forwarded-method").as_deref(), Some("GET"));
    assert_eq!(
        header(h, "x-forwarded-uri").as_deref(),
        Some("/headers?q=1")
    );
    assert_eq!(header(h, "x-forwarded-host").as_deref(), Some("app.test"));
    assert_eq!(header(h, "x-forwarded-proto").as_deref(), Some("http"));
    assert_eq!(header(h, "x-forwarded-for").as_deref(), Some("127.0.0.1"));
    assert_eq!(header(h, "host").as_deref(), Some("app.test"));

    // A 204 counts as a yes; a field the answer lacks is still removed from the request.
    let r = get(
        listen,
        "app.test",
        "/headers",
        &[("cookie", "session=good"), ("x-groups", "wheel")],
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(values(&r, "x-user"), ["cookie-user"]);
    assert!(values(&r, "x-groups").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_no_is_returned_as_sent_and_failures_fail_closed() {
    let up = HttpUpstream::spawn("app").await.unwrap();
    let auth = AuthService::spawn().await;
    let listen = free_addr();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let w = Weir::start(
        &config(
            listen,
            &up,
            auth.addr,
            &format!("access_log = \"{}\"", log.display()),
        ),
        &[listen],
    );

    let r = get(listen, "app.test", "/", &[]).await;
    assert_eq!(r.status, 401);
    assert_eq!(r.header("www-authenticate"), Some("Bearer realm=\"sso\""));
    assert_eq!(r.text(), "who are you?\n");

    let r = get(
        listen,
        "app.test",
        "/",
        &[("authorization", "Bearer forbidden")],
    )
    .await;
    assert_eq!(r.status, 403);
    assert_eq!(r.header("x-why"), Some("not in the group"));
    assert_eq!(r.header("content-type"), Some("text/plain"));
    assert_eq!(r.text(), "you shall not pass\n");

    let r = get(
        listen,
        "app.test",
        "/",
        &[("authorization", "Bearer login")],
    )
    .await;
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("/login"));
    assert_eq!(up.requests(), 0);

    // A 5xx, a body past the bound, a hang, a pool that is down: 503, fail closed. A yes
    // counts only once its answer is whole and within bounds: not with a body past the bound
    // or cut short.
    for (host, token) in [
        ("app.test", "Bearer fail"),
        ("app.test", "Bearer big"),
        ("down.test", "Bearer good"),
        ("app.test", "Bearer big-yes"),
        ("app.test", "Bearer cut-yes"),
    ] {
        let r = get(listen, host, "/", &[("authorization", token)]).await;
        assert_eq!(r.status, 503, "{token}: {}", r.text());
        assert_eq!(
            r.header("x-weir-reason"),
            Some("auth_unavailable"),
            "{token}"
        );
    }
    let t = Instant::now();
    let r = get(listen, "app.test", "/", &[("authorization", "Bearer hang")]).await;
    let took = t.elapsed();
    assert_eq!(r.status, 503, "{}", r.text());
    assert_eq!(r.header("x-weir-reason"), Some("auth_unavailable"));
    assert!(took >= Duration::from_millis(900), "{took:?}");
    assert!(
        took < Duration::from_secs(8),
        "bounded by the 1s timeout: {took:?}"
    );
    // A yes whose body does not end within the timeout is no yes.
    let t = Instant::now();
    let r = get(
        listen,
        "app.test",
        "/",
        &[("authorization", "Bearer slow-yes")],
    )
    .await;
    let took = t.elapsed();
    assert_eq!(r.status, 503, "{}", r.text());
    assert_eq!(r.header("x-weir-reason"), Some("auth_unavailable"));
    assert!(took >= Duration::from_millis(900), "{took:?}");
    assert_eq!(up.requests(), 0, "no request went on");
    w.wait_log(0, "auth service unavailable", Duration::from_secs(5));
    // The hang and the endless body ran out the filter's own timeout, and the log says so
    // (not the auth pool's request_timeout of 60 s).
    let text = w.log_text();
    let timed_out: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("auth service unavailable") && l.contains("within"))
        .collect();
    // (One line per cause and period: the two may have the same words.)
    assert!(!timed_out.is_empty(), "{text}");
    for l in timed_out {
        assert!(l.contains("the forward_auth timeout (1s)"), "{l}");
    }

    let entries = crate::common::access_log(&log, 10);
    let got: Vec<(u64, &str)> = entries
        .iter()
        .map(|e| {
            (
                e["status"].as_u64().unwrap(),
                e["reason"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (401, "unauthorized"),
            (403, "unauthorized"),
            (302, "unauthorized"),
            (503, "auth_unavailable"),
            (503, "auth_unavailable"),
            (503, "auth_unavailable"),
            (503, "auth_unavailable"),
            (503, "auth_unavailable"),
            (503, "auth_unavailable"),
            (503, "auth_unavailable"),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn positive_answers_are_cached_for_their_ttl() {
    let up = HttpUpstream::spawn("app").await.unwrap();
    let auth = AuthService::spawn().await;
    let listen = free_addr();
    let _w = Weir::start(&config(listen, &up, auth.addr, ""), &[listen]);

    let good = [("authorization", "Bearer good"), ("x-user", "root")];
    let first = Instant::now();
    let r = get(listen, "cached.test", "/headers", &good).await;
    assert_eq!(
        (r.status.as_u16(), values(&r, "x-user")),
        (200, vec!["alice".to_string()])
    );
    assert_eq!(auth.calls(), 1);
    // Within the ttl the answer is reused (with its field, the forged one still removed):
    // only checked while the ttl surely has not passed.
    let r = get(listen, "cached.test", "/headers", &good).await;
    if first.elapsed() < Duration::from_millis(900) {
        assert_eq!(auth.calls(), 1, "a cache hit asks nobody");
    }
    assert_eq!(values(&r, "x-user"), ["alice"]);
    // A no is never cached; another key is asked on its own.
    for _ in 0..2 {
        let r = get(
            listen,
            "cached.test",
            "/",
            &[("authorization", "Bearer nope")],
        )
        .await;
        assert_eq!(r.status, 401);
    }
    let before = auth.calls();
    assert!(before >= 3, "{before}");

    // Once the ttl has passed, the service is asked again.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let r = get(listen, "cached.test", "/headers", &good).await;
        assert_eq!(r.status, 200);
        if auth.calls() > before {
            break;
        }
        assert!(Instant::now() < deadline, "the cached answer never expired");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(first.elapsed() >= Duration::from_secs(1));
}

/// One HTTP/2 client through both kinds: basic_auth's challenge and user, forward_auth's
/// yes and no.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_kinds_over_http2() {
    let up = HttpUpstream::spawn("app").await.unwrap();
    let auth = AuthService::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let users = dir.path().join("htpasswd");
    crate::auth_basic::htpasswd(&users, "alice", "alice-pw", true);
    let listen = free_addr();
    let cfg = format!(
        "{}\n[routes.staff]\nlistener = \"web\"\nhost = \"staff.test\"\npool = \"app\"\nfilters = [\"staff\"]\n\n[filters.staff]\nkind = \"basic_auth\"\nusers_file = \"{}\"\nuser_header = \"X-Auth-User\"\n",
        config(listen, &up, auth.addr, ""),
        users.display()
    );
    let _w = Weir::start(&cfg, &[listen]);

    let tcp = tokio::net::TcpStream::connect(listen).await.unwrap();
    let (h2, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let send = |host: &'static str, auth: Option<String>| {
        let h2 = h2.clone();
        async move {
            let mut c = h2.ready().await.unwrap();
            let mut req = Request::get(format!("http://{host}/headers"));
            if let Some(a) = auth {
                req = req.header("authorization", a);
            }
            let (resp, _) = c.send_request(req.body(()).unwrap(), true).unwrap();
            let resp = resp.await.unwrap();
            let (parts, mut body) = resp.into_parts();
            let mut out = Vec::new();
            while let Some(chunk) = body.data().await {
                let chunk = chunk.unwrap();
                let _ = body.flow_control().release_capacity(chunk.len());
                out.extend_from_slice(&chunk);
            }
            Resp {
                status: parts.status,
                headers: parts.headers,
                body: out.into(),
            }
        }
    };

    let r = send("staff.test", None).await;
    assert_eq!(r.status, 401);
    assert!(r
        .header("www-authenticate")
        .unwrap()
        .starts_with("Basic realm=\"weir\""));
    let r = send(
        "staff.test",
        Some(crate::auth_basic::basic("alice", "alice-pw")),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(values(&r, "x-auth-user"), ["alice"]);

    let r = send("app.test", Some("Bearer good".into())).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(values(&r, "x-user"), ["alice"]);
    assert_eq!(
        header(&auth.last().headers, "x-forwarded-host").as_deref(),
        Some("app.test")
    );
    let r = send("app.test", Some("Bearer forbidden".into())).await;
    assert_eq!(r.status, 403);
    assert_eq!(r.text(), "you shall not pass\n");
}
