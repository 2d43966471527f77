//! Why a request or session failed. Every failure weir generates carries one of
//! these, in the response body, the `x-weir-reason` header and the log, so an
//! operator can tell a missing route from a dead backend at a glance.
//!
//! One list (`reasons!` below) gives each reason its label, the status weir answers with
//! and whether it is a failure; the enum, [`Reason::ALL`] and [`Reason::index`] come from
//! it, so a count kept per reason cannot miss one that was added later.

use std::fmt;

macro_rules! reasons {
    ($(
        $(#[$doc:meta])*
        $name:ident => $label:literal, $status:literal, $failure:literal;
    )+) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Reason {
            $($(#[$doc])* $name,)+
        }

        impl Reason {
            /// Every reason, in declaration order: `ALL[r.index()] == r`.
            pub const ALL: [Reason; [$(Reason::$name),+].len()] = [$(Reason::$name),+];

            /// The label in metrics, logs, `x-weir-reason` and answers' bodies.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Reason::$name => $label,)+
                }
            }

            /// The status weir answers with when it generates the response itself.
            pub const fn status(self) -> u16 {
                match self {
                    $(Reason::$name => $status,)+
                }
            }

            /// Whether an answer for this reason is a failure (an error on the dashboard):
            /// all are but the redirects and allowed CORS preflights, which are what the
            /// route asked for.
            pub const fn is_failure(self) -> bool {
                match self {
                    $(Reason::$name => $failure,)+
                }
            }
        }
    };
}

reasons! {
    RouteNotFound => "route_not_found", 404, true;
    QueueFull => "queue_full", 503, true;
    QueueTimeout => "queue_timeout", 503, true;
    NoHealthyEndpoint => "no_healthy_endpoint", 503, true;
    ConnectFailed => "connect_failed", 502, true;
    UpstreamReset => "upstream_reset", 502, true;
    UpstreamTimeout => "upstream_timeout", 504, true;
    RetriesExhausted => "retries_exhausted", 502, true;
    /// nginx's non-standard 499: the client went away before an answer.
    ClientClosed => "client_closed", 499, true;
    BadRequest => "bad_request", 400, true;
    /// Not a failure: a route with `https_redirect` answered a plain-HTTP request (permanent,
    /// and unlike 301 the method and body stay as they were).
    HttpsRedirect => "https_redirect", 308, false;
    /// Not a failure: a route's redirect filter answered (its own status replaces this one,
    /// `error_response_as`).
    Redirected => "redirected", 302, false;
    /// A route's ip_allow / ip_deny filter refused the client.
    Forbidden => "forbidden", 403, true;
    /// The request body is larger than the route's body_limit.
    BodyTooLarge => "body_too_large", 413, true;
    /// Not a failure: a route's cors filter answered a preflight it allows.
    CorsPreflight => "cors_preflight", 204, false;
    /// A route's cors filter answered a preflight it does not allow (no allow fields, so the
    /// browser blocks the request; as rs/cors, a 204 too).
    CorsRefused => "cors_refused", 204, true;
    /// A basic_auth filter found no valid credentials, or a forward_auth service said no (a
    /// forward_auth answer relayed keeps the auth service's status).
    Unauthorized => "unauthorized", 401, true;
    /// A forward_auth service could not be asked (down, failing, too slow), or a
    /// basic_auth filter has too many new passwords waiting to be checked: fail closed.
    AuthUnavailable => "auth_unavailable", 503, true;
}

impl Reason {
    /// Its place in [`Reason::ALL`], for arrays of counts indexed by reason.
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_is_at_its_index_with_a_distinct_label() {
        let mut labels = std::collections::HashSet::new();
        for (i, r) in Reason::ALL.iter().enumerate() {
            assert_eq!(r.index(), i);
            assert!(labels.insert(r.as_str()), "{r} twice");
        }
    }
}
