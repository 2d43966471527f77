//! Answers weir makes when a request fails: the error response for the
//! reason, and the log line naming listener, route, pool and endpoint
//! (its detail rendered only then).

use http::Response;

use weir_http::body::ProxyBody;
use weir_http::error::error_response_as;
use weir_metrics::reason::Reason;

/// Names for the log line of a failed request.
#[derive(Clone, Copy)]
pub struct Where<'a> {
    pub listener: &'a str,
    pub route: Option<&'a str>,
    pub pool: &'a str,
    pub endpoint: Option<&'a str>,
}

pub fn fail(reason: Reason, w: &Where<'_>, detail: &dyn std::fmt::Display) -> Response<ProxyBody> {
    fail_as(reason.status(), reason, w, detail)
}

pub fn fail_as(
    status: u16,
    reason: Reason,
    w: &Where<'_>,
    detail: &dyn std::fmt::Display,
) -> Response<ProxyBody> {
    log(status, reason, w, detail);
    error_response_as(status, reason)
}

/// The log line of a failed request: once per cause (listener, route, pool, endpoint,
/// reason and the detail's words) and period, however many requests fail the same way
/// (`log_limit.rs`); every one is counted and access-logged all the same.
pub fn log(status: u16, reason: Reason, w: &Where<'_>, detail: &dyn std::fmt::Display) {
    let said = weir_metrics::log_limit::hash_of(detail);
    weir_metrics::warn_limited!(
        (
            w.listener,
            w.route,
            w.pool,
            w.endpoint,
            reason.as_str(),
            said
        ),
        listener = w.listener,
        route = w.route.unwrap_or("-"),
        pool = w.pool,
        endpoint = w.endpoint.unwrap_or("-"),
        reason = reason.as_str(),
        status,
        "request failed: {detail}"
    );
}
