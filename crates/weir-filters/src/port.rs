//! What route filters ask of the pipeline they run in, and the pipeline implements: one
//! request of a filter's own through a pool of the running config (forward_auth's question,
//! error_pages' page), with the pool's balancing, limits and tries. Filters name no part of
//! the pipeline; a filter that needs more of it adds a method here.

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;

use http::request::Parts;
use http::Response;
use weir_upstream::error::Deadline;

use weir_http::body::ProxyBody;

/// The pipeline, as filters see it.
pub trait Pipeline: Sync {
    /// Sends `sub` (no body) and waits for its answer's head.
    fn send<'a>(&'a self, sub: SubRequest<'a>) -> Pin<Box<dyn Future<Output = Sent> + Send + 'a>>;
}

/// A filter's own request.
pub struct SubRequest<'a> {
    /// The pool, by name, in the running config.
    pub pool: &'a str,
    pub head: Parts,
    pub deadline: Deadline,
    pub on_behalf_of: OnBehalfOf,
}

/// Whose request it is, for balancing and the PROXY header of a `send_proxy` pool.
pub enum OnBehalfOf {
    /// The client's, at this address (behind trusted proxies, the one they name): balanced
    /// by the request's own key, the client's address in the PROXY header, as the request
    /// itself would be sent.
    Client(IpAddr),
    /// weir's own, as a health check's: any endpoint; a LOCAL (v2) or UNKNOWN (v1) header.
    Weir,
}

/// What came of it.
pub enum Sent {
    /// The answer, its body still to read.
    Answer(Response<ProxyBody>),
    /// The running config has no such pool.
    NoPool,
    /// No answer: why, in words for the log.
    Failed(String),
}
