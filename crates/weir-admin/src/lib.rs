//! weir's admin listener: `/healthz`, `/readyz`, `/metrics` (Prometheus),
//! `/api/v1/...` (the configuration API and JSON stats, see [`api`]) and the
//! dashboard at `/`.

pub mod api;

mod assets {
    include!(concat!(env!("OUT_DIR"), "/assets.rs"));
}

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};
use weir_control::RunningConfig;
use weir_proxy::Proxy;

use crate::api::Auth;

/// Binds the admin listener; serving starts with [`serve`].
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// What the admin listener serves from.
pub struct Admin {
    pub proxy: Arc<Proxy>,
    pub control: Arc<RunningConfig>,
    pub auth: Auth,
}

/// Serves admin requests until `stop` is cancelled.
pub async fn serve(listener: TcpListener, admin: Arc<Admin>, stop: CancellationToken) {
    if let Ok(a) = listener.local_addr() {
        info!("admin API, metrics and dashboard on http://{a}/");
    }
    tokio::spawn(flush_auth_log(admin.clone(), stop.clone()));
    loop {
        let (stream, peer) = tokio::select! {
            _ = stop.cancelled() => return,
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    warn!("admin accept: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let admin = admin.clone();
        // The address the client reached: one spelling of this listener's own origin.
        let local = stream.local_addr().ok();
        tokio::spawn(async move {
            let svc = service_fn(move |req| {
                let admin = admin.clone();
                async move { Ok::<_, Infallible>(route(&admin, local, peer.ip(), req).await) }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

/// Writes the log lines about wrong tokens that the per-source rate limit held back.
async fn flush_auth_log(admin: Arc<Admin>, stop: CancellationToken) {
    let mut every = tokio::time::interval(api::FLUSH_EVERY);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = every.tick() => admin.auth.flush_log(),
        }
    }
}

fn text(status: StatusCode, ctype: &'static str, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(ctype),
    );
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    r
}

async fn route(
    admin: &Admin,
    local: Option<SocketAddr>,
    peer: IpAddr,
    req: Request<Incoming>,
) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_owned();
    // Load balancers probe these without credentials, under any Host; they say nothing.
    let probe = path == "/healthz" || path == "/readyz";
    if !probe {
        if let Err(p) = api::browser::same_origin(req.headers(), local) {
            return p.into_response();
        }
    }
    let api = match path.strip_prefix("/api/v1/") {
        Some(rest) => Some(rest),
        None if path == "/api/v1" => Some(""),
        None => None,
    };
    if let Some(rest) = api {
        return api::handle(&admin.control, &admin.proxy, &admin.auth, rest, req, peer).await;
    }
    if !probe {
        if let Err(p) = admin.auth.check(req.headers(), false, peer) {
            return p.into_response();
        }
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return api::Problem::method_not_allowed("GET, HEAD").into_response();
    }
    let proxy = &admin.proxy;
    match path.as_str() {
        // Alive either way: a restart would not bring the store back, and the running
        // config keeps serving. But it says so.
        "/healthz" => text(
            StatusCode::OK,
            "text/plain; charset=utf-8",
            healthz(&admin.control),
        ),
        "/readyz" if proxy.is_ready() => {
            text(StatusCode::OK, "text/plain; charset=utf-8", "ready\n")
        }
        "/readyz" => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "text/plain; charset=utf-8",
            "not ready\n",
        ),
        "/metrics" => text(
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            proxy.metrics_text(),
        ),
        p => asset(p),
    }
}

/// `ok`, and what of the config source is not: it unreachable (the last applied config
/// serves, changes are refused), stored resources that do not validate (held back, the rest
/// runs). Alive either way.
fn healthz(control: &RunningConfig) -> String {
    let mut text = String::from("ok");
    if let Some(why) = control.store_problem() {
        text.push_str(&format!(
            "; config store unreachable ({why}): serving the last applied config, refusing changes"
        ));
    }
    let invalid = control.invalid();
    if !invalid.is_empty() {
        let each: Vec<String> = invalid
            .iter()
            .map(|i| {
                let why: Vec<&str> = i.errors.iter().map(|e| e.message.as_str()).collect();
                format!("{} ({})", i.path, why.join("; "))
            })
            .collect();
        let n = invalid.len();
        let (count, verb) = match n {
            1 => ("1 stored resource does".to_string(), "it is"),
            n => (format!("{n} stored resources do"), "they are"),
        };
        text.push_str(&format!(
            "; {count} not validate, so {verb} held back (the rest of the config runs): {}",
            each.join(", ")
        ));
    }
    text.push('\n');
    text
}

fn asset(path: &str) -> Response<Full<Bytes>> {
    let name = match path {
        "/" => "index.html",
        p => p.strip_prefix("/assets/").unwrap_or(""),
    };
    match assets::ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, ctype, body)) => text(StatusCode::OK, ctype, Bytes::from_static(body)),
        None => text(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "not found\n",
        ),
    }
}
