//! A request the server codec refused before it could be routed (bad
//! framing, oversize head, an HTTP/2 expectation weir cannot meet): counted, logged and
//! access-logged like any failure, with the listener's "no route" labels since it has no
//! route.

use http::Request;

use super::accounting::describe;
use crate::http::conn_ctx::ConnCtx;
use weir_http::accesslog::Entry;
use weir_metrics::reason::Reason;

pub fn refused(ctx: &ConnCtx, status: u16, why: &dyn std::fmt::Display) {
    refused_as(ctx, status, why, |_| {});
}

/// A request refused after its head was read (an HTTP/2 expectation weir cannot meet):
/// as [`refused`], with the request's method, host and path in its access log entry.
pub fn refused_request<B>(
    ctx: &ConnCtx,
    status: u16,
    why: &dyn std::fmt::Display,
    req: &Request<B>,
) {
    refused_as(ctx, status, why, |e| describe(e, req));
}

fn refused_as(
    ctx: &ConnCtx,
    status: u16,
    why: &dyn std::fmt::Display,
    describe: impl FnOnce(&mut Entry),
) {
    let snap = ctx.shared.snapshot.load();
    let Some(Some(l)) = snap.listeners.get(ctx.slot) else {
        return;
    };
    let reason = Reason::BadRequest;
    // Once per listener and status per period: a scanner's flood is one line.
    weir_metrics::warn_limited!(
        (&*l.name, status),
        listener = &*l.name,
        client = %ctx.conn.client,
        reason = reason.as_str(),
        status,
        "request refused: {why}"
    );
    l.no_route.no_endpoint.record(status, Some(reason));
    l.no_route.duration.observe(std::time::Duration::ZERO);
    if let Some(sink) = &l.access_log {
        let mut e = Entry::begin(l.name.clone(), ctx.conn.client);
        describe(&mut e);
        e.status = status;
        e.reason = Some(reason.as_str());
        sink.log(e);
    }
}
