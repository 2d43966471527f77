//! Where a request goes: its listener's route table in the current
//! snapshot, looked up by host and path.

use std::sync::Arc;

use http::header::HeaderValue;
use http::Request;

use super::accounting::Accounting;
use super::host::request_host;
use super::path::normalize_target;
use crate::http::conn_ctx::ConnCtx;
use crate::router::Target;
use weir_metrics::reason::Reason;

/// A routed request: what the rest of its way needs from the snapshot.
pub struct Routed {
    pub listener: Arc<str>,
    /// The client's host: sent upstream as Host (unless `upstream_host`), and as
    /// X-Forwarded-Host.
    pub host: Option<HeaderValue>,
    /// The Host sent upstream instead, when a filter rewrote it.
    pub upstream_host: Option<HeaderValue>,
    /// The route (or default) it matched: its name, pool, metrics, `hsts` and filters.
    pub target: Arc<Target>,
}

/// Routes the request, or says why not (400 without a valid host or with a path that has no
/// normal form, 404 without a route; counted and logged here). Puts the path in normal form
/// (`path.rs`) first. Starts its access log entry either way.
pub fn route<B>(
    ctx: &ConnCtx,
    req: &mut Request<B>,
    acct: &mut Accounting,
) -> Result<Routed, Reason> {
    // One look at the snapshot per request; the guard is gone before any await.
    let snap = ctx.shared.snapshot.load();
    let Some(Some(l)) = snap.listeners.get(ctx.slot) else {
        return Err(Reason::RouteNotFound);
    };
    acct.start_entry(l, ctx, req);
    let Ok(host_hdr) = request_host(req) else {
        acct.count_as(&l.no_route, None, Some(Reason::BadRequest));
        return Err(Reason::BadRequest);
    };
    let host = host_hdr.as_ref().and_then(|v| v.to_str().ok());
    if let Err(why) = normalize_target(req, l.path) {
        acct.count_as(&l.no_route, None, Some(Reason::BadRequest));
        // Once per listener and why per period, whatever the paths (a scanner tries many).
        weir_metrics::warn_limited!(
            (&*l.name, why),
            listener = &*l.name,
            path = req.uri().path(),
            reason = Reason::BadRequest.as_str(),
            status = Reason::BadRequest.status(),
            "request refused: its path has no normal form: {why}"
        );
        return Err(Reason::BadRequest);
    }
    match l.routes.lookup(host, req.uri().path()) {
        Some(t) => Ok(Routed {
            listener: l.name.clone(),
            target: t.clone(),
            host: host_hdr,
            upstream_host: None,
        }),
        None => {
            acct.count_as(&l.no_route, None, Some(Reason::RouteNotFound));
            let reason = Reason::RouteNotFound;
            // Once per listener and host per period, whatever the paths: a scanner's
            // thousands of 404s are one line (each is counted and access-logged).
            weir_metrics::warn_limited!(
                (&*l.name, host),
                listener = &*l.name,
                route = "-",
                pool = "-",
                reason = reason.as_str(),
                status = reason.status(),
                "request failed: no route for host {host:?} path {:?}",
                req.uri().path()
            );
            Err(reason)
        }
    }
}
