//! What the fake backend answers, by path. See the crate docs of [`crate::HttpUpstream`].

use std::convert::Infallible;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{header, HeaderValue, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::sync::mpsc;

use crate::body::{chunked_body, empty, full, pattern_body, AnyBody, Guarded};
use crate::latency::Latency;
use crate::shared::{RequestRecord, UpstreamState};
use crate::ticket::{ConnState, Ticket};

pub(crate) async fn handle(
    shared: Arc<UpstreamState>,
    conn: Arc<ConnState>,
    close_tx: mpsc::Sender<Ticket>,
    req: Request<Incoming>,
) -> Result<Response<Guarded>, Infallible> {
    let at = Instant::now();
    let mut ticket = Ticket::new(conn.clone(), shared.clone());
    let q = Query::parse(req.uri().query());
    let (parts, body) = req.into_parts();
    let path = parts.uri.path();

    // Health checks skip the workers, the latency and the counters, so enabling them does
    // not disturb what a test measures; `?latency_ms`/`?hang` still apply.
    if path == "/healthz" {
        shared.health_checks.fetch_add(1, Relaxed);
        drain(body).await;
        q.wait(Latency::None).await;
        let (status, text) = match shared.healthy.load(Relaxed) {
            true => (StatusCode::OK, "ok"),
            false => (StatusCode::SERVICE_UNAVAILABLE, "unhealthy"),
        };
        return Ok(respond(&shared, conn.id, status, full(text), ticket));
    }

    // What the request ids say (see `UpstreamState::note_id`), for a harness that
    // counts duplicated requests across restarts.
    if path == "/__ids" {
        drain(body).await;
        let text = format!(
            "{{\"ids\":{},\"duplicates\":{}}}\n",
            shared.ids.lock().unwrap().len(),
            shared.duplicates.load(Relaxed)
        );
        return Ok(respond(
            &shared,
            conn.id,
            StatusCode::OK,
            full(text),
            ticket,
        ));
    }
    shared.note_id(&parts.headers);

    let (body_len, echo_body) = if path == "/echo" {
        (content_length(&parts.headers), Some(body))
    } else {
        (drain(body).await, None)
    };
    shared.record(|| RequestRecord {
        method: parts.method.clone(),
        uri: parts.uri.clone(),
        path: path.to_owned(),
        version: parts.version,
        headers: parts.headers.clone(),
        body_len,
        conn_id: conn.id,
        at,
    });
    ticket.start_work().await;
    q.wait(shared.latency).await;

    let (status, body) = if let Some(incoming) = echo_body {
        // Streamed straight back: hyper reads and writes concurrently, nothing is buffered.
        (StatusCode::OK, incoming.map_err(Into::into).boxed_unsync())
    } else if path == "/headers" {
        let headers: Vec<(&str, String)> = parts
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let json = serde_json::json!({
            "upstream": shared.name,
            "method": parts.method.as_str(),
            "uri": parts.uri.to_string(),
            "version": format!("{:?}", parts.version),
            "headers": headers,
            "body_len": body_len,
        });
        (StatusCode::OK, full(json.to_string()))
    } else if path == "/close" {
        // The connection task writes the reply by hand; it keeps our ticket until then.
        let _ = close_tx.send(ticket).await;
        return std::future::pending().await;
    } else if let Some(code) = path.strip_prefix("/status/") {
        match code.parse().ok().and_then(|c| StatusCode::from_u16(c).ok()) {
            Some(s) if s.is_informational() => bad("1xx cannot be a final status"),
            Some(s @ (StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED)) => (s, empty()),
            Some(s) => (s, full(shared.name_body.clone())),
            None => bad("bad status code"),
        }
    } else if let Some(n) = path.strip_prefix("/bytes/") {
        match n.parse() {
            Ok(n) => (StatusCode::OK, pattern_body(n)),
            Err(_) => bad("bad byte count"),
        }
    } else if let Some(n) = path.strip_prefix("/chunked/") {
        match n.parse() {
            Ok(n) => (StatusCode::OK, chunked_body(n, q.delay)),
            Err(_) => bad("bad chunk count"),
        }
    } else {
        (StatusCode::OK, full(shared.default_body.clone()))
    };
    Ok(respond(&shared, conn.id, status, body, ticket))
}

fn bad(why: &'static str) -> (StatusCode, AnyBody) {
    (StatusCode::BAD_REQUEST, full(format!("{why}\n")))
}

fn respond(
    shared: &UpstreamState,
    conn_id: u64,
    status: StatusCode,
    body: AnyBody,
    ticket: Ticket,
) -> Response<Guarded> {
    let mut resp = Response::new(Guarded::new(body, ticket));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert("x-upstream", shared.x_upstream.clone());
    h.insert("x-upstream-conn", HeaderValue::from(conn_id));
    if let Some(ka) = &shared.keep_alive {
        h.insert(header::HeaderName::from_static("keep-alive"), ka.clone());
    }
    resp
}

/// Reads and discards the request body, returning its length.
async fn drain(mut body: Incoming) -> u64 {
    let mut n = 0;
    while let Some(Ok(frame)) = body.frame().await {
        n += frame.data_ref().map_or(0, |d| d.len() as u64);
    }
    n
}

fn content_length(h: &http::HeaderMap) -> u64 {
    h.get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse().ok())
        .unwrap_or(0)
}

/// Per-request overrides: `latency_ms=N`, `hang=1`, `delay_ms=D` (for `/chunked`).
#[derive(Default)]
struct Query {
    latency: Option<Duration>,
    hang: bool,
    delay: Duration,
}

impl Query {
    fn parse(q: Option<&str>) -> Query {
        let mut out = Query::default();
        for pair in q.unwrap_or("").split('&') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let ms = || v.parse().ok().map(Duration::from_millis);
            match k {
                "latency_ms" => out.latency = ms(),
                "delay_ms" => out.delay = ms().unwrap_or_default(),
                "hang" => out.hang = !matches!(v, "0" | "false"),
                _ => {}
            }
        }
        out
    }

    /// The request's service time: the override, else a draw from `default`.
    async fn wait(&self, default: Latency) {
        if self.hang {
            std::future::pending::<()>().await;
        }
        let d = self.latency.unwrap_or_else(|| default.sample());
        if !d.is_zero() {
            tokio::time::sleep(d).await;
        }
    }
}
