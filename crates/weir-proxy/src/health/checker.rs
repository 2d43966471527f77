//! Active health checks: one task per endpoint, probing every `interval`
//! (±10% jitter, so a fleet of weirs does not probe in lockstep), each probe
//! bounded by `timeout`; rise/fall consecutive results flip the state.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use tokio::task::JoinHandle;
use tracing::{info, warn};
use weir_config::{Health, HealthCheck};

use crate::clock;
use crate::endpoint::EndpointRt;
use crate::transport::connect;

/// Largest health response body read when looking for `expect_body`.
const MAX_BODY: usize = 64 * 1024;

/// A running checker; dropping it stops the checks.
#[derive(Debug)]
pub struct Checker {
    pub cfg: Health,
    task: JoinHandle<()>,
}

impl Drop for Checker {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub fn start(ep: Arc<EndpointRt>, cfg: Health, slow_start: bool) -> Checker {
    let task = tokio::spawn(run(ep, cfg.clone(), slow_start));
    Checker { cfg, task }
}

fn jittered(d: Duration) -> Duration {
    d.mul_f64(0.9 + fastrand::f64() * 0.2)
}

async fn run(ep: Arc<EndpointRt>, cfg: Health, slow_start: bool) {
    // The first probe comes soon, so a new endpoint's state is known early.
    tokio::time::sleep(jittered(cfg.interval.min(Duration::from_millis(100)))).await;
    loop {
        let result = match tokio::time::timeout(cfg.timeout, probe(&ep, &cfg)).await {
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
                    ep.ramp_from_ms
                        .store(clock::now_ms(), std::sync::atomic::Ordering::Relaxed);
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

async fn probe(ep: &EndpointRt, cfg: &Health) -> Result<(), String> {
    let stream = connect(ep.addr, cfg.timeout).await.map_err(|e| {
        // Closes seen just before were an outage, not an idle timeout.
        ep.idle.discard();
        e.to_string()
    })?;
    if cfg.check != HealthCheck::Http {
        return Ok(());
    }
    let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let host = cfg.host.clone().unwrap_or_else(|| ep.addr_str.to_string());
    let req = Request::get(cfg.path.as_str())
        .header(http::header::HOST, host)
        .header(http::header::USER_AGENT, "weir-health-check")
        .header(http::header::CONNECTION, "close")
        .body(Empty::<Bytes>::new())
        .map_err(|e| e.to_string())?;
    let resp = tx.send_request(req).await.map_err(|e| e.to_string())?;
    let status: StatusCode = resp.status();
    let (lo, hi) = cfg.expect_status;
    if !(lo..=hi).contains(&status.as_u16()) {
        return Err(format!("status {} outside {lo}-{hi}", status.as_u16()));
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
