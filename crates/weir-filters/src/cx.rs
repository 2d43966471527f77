//! What one request's filters share ([`Cx`]): the facts about it they read (the request as
//! it arrived, kept only as far as the chain [`Reads`] it), the connection, the pipeline's
//! port, and what earlier filters decided that later steps need.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use http::{HeaderValue, Method, Request, Uri};
use weir_http::conn_info::ConnInfo;

use crate::asked::Asked;
use crate::port::Pipeline;

/// What of the request as it arrived a chain's filters read after it may have changed (a
/// rewrite) or gone upstream (a response phase): [`Cx`] keeps a copy of only that, since each
/// copy is a shared count taken and dropped per request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reads {
    /// The target (`{path}`, forward_auth's `X-Forwarded-Uri`).
    pub uri: bool,
    /// The host (`{host}`, a redirect's, forward_auth's `X-Forwarded-Host`).
    pub host: bool,
}

impl Reads {
    pub(crate) fn or(self, o: Reads) -> Reads {
        Reads {
            uri: self.uri || o.uri,
            host: self.host || o.host,
        }
    }
}

/// What a request's filters share: facts about it they read, and what they decided that
/// later steps need (the Host sent upstream, the request id).
pub struct Cx<'a> {
    pub conn: &'a ConnInfo,
    /// The pipeline the request is in, for a filter's own requests.
    pub pipeline: &'a dyn Pipeline,
    /// The client's address: behind trusted proxies, the one their headers name.
    pub client: IpAddr,
    /// When the request arrived: what filters compare their remembered answers' ages with
    /// (a clock read fewer per request).
    pub start: Instant,
    /// The request as it arrived (before any filter changed it), for variables and redirects.
    pub method: Method,
    /// Kept only when the chain [`Reads`] it: see [`Cx::uri`].
    uri: Option<Uri>,
    /// Kept only when the chain [`Reads`] it: see [`Cx::host`].
    pub(crate) host: Option<HeaderValue>,
    reads: Reads,
    /// The Host to send upstream instead of `host`, once a rewrite's `host` chose one.
    pub upstream_host: Option<HeaderValue>,
    /// The request id, once a filter made or kept one.
    pub request_id: Option<HeaderValue>,
    /// How many filters' request phases ran (their response phases run, counting it down).
    pub(crate) entered: usize,
    /// The request's `Origin`, kept by a cors filter's request phase for its response phase.
    pub origin: Option<HeaderValue>,
    /// The request's `Accept`, kept by an error_pages filter (a page or problem+json).
    pub accept: Option<HeaderValue>,
    /// Whether the request is a gRPC call (error_pages leaves those alone).
    pub grpc: bool,
    /// What the request's Accept-Encoding and Range asked, for a compress filter.
    pub compress: Option<Asked>,
    /// The user an auth filter let in, for the access log.
    pub user: Option<Arc<str>>,
}

impl<'a> Cx<'a> {
    /// `client`: the request's client (behind trusted proxies, the one they name); `host`
    /// and the request's target are kept as far as `reads` says.
    #[allow(clippy::too_many_arguments)]
    pub fn new<B>(
        conn: &'a ConnInfo,
        pipeline: &'a dyn Pipeline,
        client: IpAddr,
        req: &Request<B>,
        host: Option<&HeaderValue>,
        reads: Reads,
        grpc: bool,
        start: Instant,
    ) -> Cx<'a> {
        Cx {
            conn,
            pipeline,
            client,
            start,
            method: req.method().clone(),
            uri: reads.uri.then(|| req.uri().clone()),
            host: host.filter(|_| reads.host).cloned(),
            reads,
            upstream_host: None,
            request_id: None,
            entered: 0,
            origin: None,
            accept: None,
            grpc,
            compress: None,
            user: None,
        }
    }

    /// The request's target as it arrived. Only for a filter whose [`Filter::reads`] says
    /// so (a debug build panics otherwise, so a test finds the omission).
    pub fn uri(&self) -> Option<&Uri> {
        debug_assert!(
            self.reads.uri,
            "a filter reads the target without saying so"
        );
        self.uri.as_ref()
    }

    /// The request's host as the client sent it (Host, or the absolute target's authority).
    /// Only for a filter whose [`Filter::reads`] says so (a debug build panics otherwise).
    pub fn host(&self) -> Option<&HeaderValue> {
        debug_assert!(self.reads.host, "a filter reads the host without saying so");
        self.host.as_ref()
    }

    /// `https` over TLS, else `http`.
    pub fn scheme(&self) -> &'static str {
        self.conn.proto()
    }

    /// The request id, made now if no filter made or kept one yet.
    pub fn request_id(&mut self) -> HeaderValue {
        self.request_id
            .get_or_insert_with(crate::request_id::new_request_id)
            .clone()
    }
}
