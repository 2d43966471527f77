//! What a filter's phase decided: a request phase lets the request on, answers it, or must
//! wait ([`Verdict`]); a response phase is done or must wait ([`Later`]).

use http::Response;
use weir_http::body::ProxyBody;
use weir_metrics::reason::Reason;

/// What a request phase decided.
pub enum Verdict {
    Continue,
    /// weir answers with this, counted and logged under the reason.
    Answer(Box<Response<ProxyBody>>, Reason),
    /// Not decided without waiting: the filter's `wait` phase decides.
    Wait,
}

/// Whether a response phase is done or must wait (for a page fetched from a pool).
#[derive(PartialEq, Eq)]
pub enum Later {
    Done,
    Wait,
}
