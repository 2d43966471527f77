//! Active health checks: one task per endpoint, probing every `interval`
//! (±10% jitter, so a fleet of weirs does not probe in lockstep), each probe
//! bounded by `timeout`; rise/fall consecutive results flip the state. An
//! http check is a GET on a fresh session, opened through the session seam
//! (`Session::open`, in the pool's protocol) as proxied requests' are, so
//! there is one way to an endpoint; a grpc check is
//! `grpc.health.v1.Health/Check` (`grpc.rs`). A tcp check only connects.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::request::Parts;
use http::{Request, Response};
use http_body_util::BodyExt;
use tokio::task::JoinHandle;
use tracing::{info, warn};
use weir_config::{Health, HealthCheck, SendProxy};

use crate::body::UpstreamResponseBody;
use crate::endpoint::EndpointRt;
use crate::kind::{Dial, SessionKind};
use crate::session::Session;
use weir_codec::added::Added;
use weir_codec::send::{HeadTimer, Payload};
use weir_transport::{proxy_protocol, Alpn, UpstreamStream, UpstreamTls};

/// Largest health response body read when looking for `expect_body`.
const MAX_BODY: usize = 64 * 1024;

/// A running checker; dropping it stops the checks.
#[derive(Debug)]
pub struct Checker {
    pub cfg: Health,
    /// The pool's `UpstreamTls::id` it checks with (0: plain).
    pub tls: u64,
    /// The pool's protocol, which http and grpc checks speak.
    pub protocol: SessionKind,
    /// The pool's `send_proxy`: a probe starts with v2's `LOCAL` or v1's `PROXY UNKNOWN`
    /// (it has no client), so an endpoint that requires the header still answers it.
    pub send_proxy: Option<SendProxy>,
    task: JoinHandle<()>,
}

impl Drop for Checker {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What a probe connects with: the pool's TLS and protocol.
#[derive(Clone)]
struct Via {
    tls: Option<Arc<UpstreamTls>>,
    protocol: SessionKind,
    proxy_header: Option<Arc<[u8]>>,
}

pub fn start(
    ep: Arc<EndpointRt>,
    cfg: Health,
    slow_start: bool,
    tls: Option<Arc<UpstreamTls>>,
    protocol: SessionKind,
    send_proxy: Option<SendProxy>,
) -> Checker {
    let id = tls.as_ref().map_or(0, |t| t.id);
    let proxy_header = send_proxy.map(|v| proxy_protocol::header(v, None, None).into());
    let via = Via {
        tls,
        protocol,
        proxy_header,
    };
    let task = tokio::spawn(run(ep, cfg.clone(), slow_start, via));
    Checker {
        cfg,
        tls: id,
        protocol,
        send_proxy,
        task,
    }
}

fn jittered(d: Duration) -> Duration {
    d.mul_f64(0.9 + fastrand::f64() * 0.2)
}

async fn run(ep: Arc<EndpointRt>, cfg: Health, slow_start: bool, via: Via) {
    // The first probe comes soon, so a new endpoint's state is known early.
    tokio::time::sleep(jittered(cfg.interval.min(Duration::from_millis(100)))).await;
    loop {
        let result = match tokio::time::timeout(cfg.timeout, probe(&ep, &cfg, &via)).await {
            Ok(r) => r,
            Err(_) => Err(format!("no answer within {:?}", cfg.timeout)),
        };
        let ok = result.is_ok();
        if let Some(up) = ep.health.check_result(ok, cfg.rise, cfg.fall) {
            if up {
                info!(
                    pool = &*ep.pool,
                    endpoint = &*ep.addr_str,
                    "endpoint is healthy again"
                );
                if slow_start {
                    ep.ramp.restart();
                }
            } else {
                let why = result.err().unwrap_or_default();
                warn!(
                    pool = &*ep.pool,
                    endpoint = &*ep.addr_str,
                    "endpoint is unhealthy: {why}"
                );
            }
        }
        tokio::time::sleep(jittered(cfg.interval)).await;
    }
}

async fn probe(ep: &EndpointRt, cfg: &Health, via: &Via) -> Result<(), String> {
    // Through the transport a pool's requests use, so a TLS pool is checked over TLS too
    // (a tcp check then passes once the handshake completes).
    let tls = via.tls.as_deref();
    let session = match cfg.check {
        HealthCheck::Tcp | HealthCheck::None => {
            let connect = UpstreamStream::connect(
                ep.addr,
                cfg.timeout,
                tls,
                Alpn::Tcp,
                via.proxy_header.as_deref(),
            );
            connect.await.map_err(|e| {
                // Closes seen just before were an outage, not an idle timeout.
                ep.idle.discard();
                e.to_string()
            })?;
            return Ok(());
        }
        HealthCheck::Http | HealthCheck::Grpc => {
            // A session of its own: one stream on a connection nobody shares.
            let dial = Dial {
                addr: ep.addr,
                timeout: cfg.timeout,
                tls,
                protocol: via.protocol,
                max_streams: 1,
                idle_timeout: Duration::ZERO,
                ping: None,
                proxy_header: via.proxy_header.as_deref(),
            };
            Session::open(dial).await.map_err(|e| {
                ep.idle.discard();
                e.to_string()
            })?
        }
    };
    let host = cfg.host.clone().unwrap_or_else(|| ep.addr_str.to_string());
    // `run` bounds the whole probe by `timeout`; the session's own deadline
    // only has to come later, so that the reason logged stays "no answer".
    let deadline = Instant::now() + cfg.timeout * 2;
    if cfg.check == HealthCheck::Grpc {
        let (parts, body) = super::grpc::request(&host, &cfg.service)?;
        let resp = exchange(session, &parts, body, deadline).await?;
        return super::grpc::verdict(resp, &cfg.service).await;
    }
    let mut get = Request::get(cfg.path.as_str())
        .header(http::header::HOST, host)
        .header(http::header::USER_AGENT, "weir-health-check");
    if via.protocol.is_http1() {
        get = get.header(http::header::CONNECTION, "close");
    }
    let (parts, ()) = get.body(()).map_err(|e| e.to_string())?.into_parts();
    let resp = exchange(session, &parts, Bytes::new(), deadline).await?;
    let status = resp.status().as_u16();
    let (lo, hi) = cfg.expect_status;
    if !(lo..=hi).contains(&status) {
        return Err(format!("status {status} outside {lo}-{hi}"));
    }
    if let Some(want) = &cfg.expect_body {
        let body = http_body_util::Limited::new(resp.into_body(), MAX_BODY)
            .collect()
            .await
            .map_err(|e| format!("reading body: {e}"))?
            .to_bytes();
        if !body.windows(want.len()).any(|w| w == want.as_bytes()) {
            return Err(format!("body lacks {want:?}"));
        }
    }
    Ok(())
}

/// A probe's response body: the session's, whatever its protocol.
type ProbeBody = UpstreamResponseBody;

/// The response to a probe's request on its own `session`: the one place the checker
/// sends.
async fn exchange(
    session: Session,
    parts: &Parts,
    body: Bytes,
    deadline: Instant,
) -> Result<Response<ProbeBody>, String> {
    let timer = HeadTimer::from(deadline);
    session
        .send(parts, &Added::NONE, Payload::Bytes(body), timer, false)
        .await
        .map_err(|f| f.error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// Runs one probe against a backend that answers `response` to the
    /// first request; returns the probe's result and the request's bytes.
    async fn probe_with(cfg: Health, response: &'static [u8]) -> (Result<(), String>, String) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let backend = tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.ends_with(b"\r\n\r\n") {
                let n = s.read(&mut buf).await.unwrap();
                assert!(n > 0, "request cut short: {req:?}");
                req.extend_from_slice(&buf[..n]);
            }
            s.write_all(response).await.unwrap();
            String::from_utf8(req).unwrap()
        });
        let ep = EndpointRt::new("p".into(), addr, false, true);
        let via = Via {
            tls: None,
            protocol: weir_config::UpstreamProtocol::Http1.into(),
            proxy_header: None,
        };
        let result = tokio::time::timeout(cfg.timeout, probe(&ep, &cfg, &via))
            .await
            .unwrap_or_else(|_| Err("timeout".into()));
        (result, backend.await.unwrap())
    }

    fn http(f: impl FnOnce(&mut Health)) -> Health {
        let mut cfg = Health {
            check: HealthCheck::Http,
            timeout: Duration::from_secs(5),
            ..Health::default()
        };
        f(&mut cfg);
        cfg
    }

    #[tokio::test]
    async fn sends_path_and_host_and_checks_the_status() {
        let ok = b"HTTP/1.1 204 No Content\r\n\r\n";
        let (r, req) = probe_with(http(|_| {}), ok).await;
        assert_eq!(r, Ok(()));
        assert!(
            req.starts_with("GET /healthz HTTP/1.1\r\nhost: 127.0.0.1:"),
            "{req}"
        );
        assert!(
            req.ends_with("\r\nuser-agent: weir-health-check\r\nconnection: close\r\n\r\n"),
            "{req}"
        );
        let cfg = http(|c| {
            c.path = "/ready?deep=1".into();
            c.host = Some("svc.internal".into());
        });
        let (_, req) = probe_with(cfg, ok).await;
        assert_eq!(
            req,
            "GET /ready?deep=1 HTTP/1.1\r\nhost: svc.internal\r\n\
             user-agent: weir-health-check\r\nconnection: close\r\n\r\n"
        );
        let cfg = http(|c| c.expect_status = (200, 200));
        let (r, _) = probe_with(cfg, ok).await;
        assert_eq!(r, Err("status 204 outside 200-200".into()));
    }

    #[tokio::test]
    async fn looks_for_expect_body_within_the_first_64_kib() {
        let cfg = || http(|c| c.expect_body = Some("ready".into()));
        let (r, _) = probe_with(
            cfg(),
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nall\r\n7\r\n ready!\r\n0\r\n\r\n",
        )
        .await;
        assert_eq!(r, Ok(()));
        let (r, _) = probe_with(
            cfg(),
            b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nnot yet",
        )
        .await;
        assert_eq!(r, Err("body lacks \"ready\"".into()));
        let big: &'static [u8] = Box::leak(
            format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{}ready",
                MAX_BODY + 5,
                "x".repeat(MAX_BODY)
            )
            .into_bytes()
            .into_boxed_slice(),
        );
        let (r, _) = probe_with(cfg(), big).await;
        assert!(
            r.as_ref().is_err_and(|e| e.starts_with("reading body")),
            "{r:?}"
        );
    }
}
