//! Why a request or session failed. Every failure weir generates carries one of
//! these, in the response body, the `x-weir-reason` header and the log, so an
//! operator can tell a missing route from a dead backend at a glance.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    RouteNotFound,
    QueueFull,
    QueueTimeout,
    NoHealthyEndpoint,
    ConnectFailed,
    UpstreamReset,
    UpstreamTimeout,
    RetriesExhausted,
    ClientClosed,
    BadRequest,
    /// Not a failure: a route with `https_redirect` answered a plain-HTTP request.
    HttpsRedirect,
    /// Not a failure: a route's redirect filter answered.
    Redirected,
    /// A route's ip_allow / ip_deny filter refused the client.
    Forbidden,
    /// The request body is larger than the route's body_limit.
    BodyTooLarge,
    /// Not a failure: a route's cors filter answered a preflight it allows.
    CorsPreflight,
    /// A route's cors filter answered a preflight it does not allow (no allow fields, so the
    /// browser blocks the request).
    CorsRefused,
    /// A basic_auth filter found no valid credentials, or a forward_auth service said no.
    Unauthorized,
    /// A forward_auth service could not be asked (down, failing, too slow), or a
    /// basic_auth filter has too many new passwords waiting to be checked: fail closed.
    AuthUnavailable,
}

impl Reason {
    pub const fn as_str(self) -> &'static str {
        match self {
            Reason::RouteNotFound => "route_not_found",
            Reason::QueueFull => "queue_full",
            Reason::QueueTimeout => "queue_timeout",
            Reason::NoHealthyEndpoint => "no_healthy_endpoint",
            Reason::ConnectFailed => "connect_failed",
            Reason::UpstreamReset => "upstream_reset",
            Reason::UpstreamTimeout => "upstream_timeout",
            Reason::RetriesExhausted => "retries_exhausted",
            Reason::ClientClosed => "client_closed",
            Reason::BadRequest => "bad_request",
            Reason::HttpsRedirect => "https_redirect",
            Reason::Redirected => "redirected",
            Reason::Forbidden => "forbidden",
            Reason::BodyTooLarge => "body_too_large",
            Reason::CorsPreflight => "cors_preflight",
            Reason::CorsRefused => "cors_refused",
            Reason::Unauthorized => "unauthorized",
            Reason::AuthUnavailable => "auth_unavailable",
        }
    }

    /// Whether an answer for this reason is a failure (an error on the dashboard): all are
    /// but the redirects and allowed CORS preflights, which are what the route asked for.
    pub const fn is_failure(self) -> bool {
        !matches!(
            self,
            Reason::HttpsRedirect | Reason::Redirected | Reason::CorsPreflight
        )
    }

    /// The status weir answers with when it generates the response itself.
    pub const fn status(self) -> u16 {
        match self {
            Reason::RouteNotFound => 404,
            Reason::QueueFull | Reason::QueueTimeout | Reason::NoHealthyEndpoint => 503,
            Reason::ConnectFailed | Reason::UpstreamReset | Reason::RetriesExhausted => 502,
            Reason::UpstreamTimeout => 504,
            // nginx's non-standard 499: the client went away before an answer.
            Reason::ClientClosed => 499,
            Reason::BadRequest => 400,
            // Permanent, and unlike 301 the method and body stay as they were.
            Reason::HttpsRedirect => 308,
            // The filter's own status replaces it (`error_response_as`).
            Reason::Redirected => 302,
            Reason::Forbidden => 403,
            Reason::BodyTooLarge => 413,
            // As rs/cors: a refused preflight is a 204 too, only without the allow fields.
            Reason::CorsPreflight | Reason::CorsRefused => 204,
            // A forward_auth answer relayed keeps the auth service's status.
            Reason::Unauthorized => 401,
            Reason::AuthUnavailable => 503,
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
