//! Route filters: a route's ordered chain of named steps, each kind a file here.
//!
//! Each filter is built once per config (`Filter::build`, when weir-proxy prepares a config:
//! regexes compiled, literal header values made, files read; one whose settings did not
//! change is kept, with its state), and each route's `Chain` of them (`Chain::of`, when the
//! snapshot is built) is carried by its route; a route without filters has an empty chain and
//! the request path pays one emptiness check. For one request, the pipeline
//! (weir-proxy's `http/forward/filtered.rs`) runs each filter's request phase in order
//! (`request`): a
//! filter may change the request, or answer itself (`Verdict::Answer`, with the reason the
//! answer is counted and logged under), which ends the chain. Then, once the response is there
//! (an upstream's or weir's own), the response phases of the filters whose request phase ran
//! go in reverse order (`response`), as Envoy's and pingora's filters do.
//!
//! Phases are plain calls. A filter that must wait on I/O (a new password verified off the
//! runtime, an auth service asked, an error page fetched from a pool) says so
//! (`Verdict::Wait`, `Later::Wait`) and its async `wait` phase runs next, in a future the
//! caller boxes: a chain that decides at once makes no future per filter, allocates nothing
//! for one, and does not grow the request's future by the size of the rare one.
//!
//! Filters know the pipeline only by its port (`port.rs`): a request of their own through a
//! pool. What they read of the client connection is weir-http's `ConnInfo`.
//!
//! Dispatch is static: `Filter` is an enum and each phase a `match`. To add a kind: its model
//! and reader in `weir-config/src/filter/`, a file here with `build`, `request` and/or
//! `response`, a variant below, and its docs (docs/CONFIG.md "Route filters").

mod asked;
mod basic_auth;
mod body_limit;
mod compress;
mod cors;
mod cx;
mod error_pages;
mod forward_auth;
mod headers;
mod ip;
mod kind;
pub mod port;
mod redirect;
mod request_id;
mod rewrite;
mod statics;
mod template;
mod verdict;

use std::net::IpAddr;
use std::sync::Arc;

use http::{Request, Response};

use weir_codec::client_body::ClientBody;
use weir_http::body::ProxyBody;
use weir_metrics::reason::Reason;

pub use body_limit::BodyLimit;
pub use cx::{Cx, Reads};
pub use kind::Kind;
pub use port::Pipeline;
pub use verdict::{Later, Verdict};

/// The filter kinds: one line each, `Variant(type)`, the type a file of this crate that
/// implements [`Kind`]. The `Filter` enum and its static dispatch, phase by phase, come from
/// this list: a new kind is its file plus one line here (and its settings in weir-config,
/// one line in its list of kinds).
macro_rules! kinds {
    ($($variant:ident($kind:ty),)+) => {
        /// One built filter.
        #[derive(Debug)]
        pub enum Filter {
            $($variant($kind),)+
        }

        impl Filter {
            /// The filter named `name` as the config has it: an error refuses the change.
            pub fn build(name: &str, f: &weir_config::Filter) -> Result<Filter, BuildError> {
                let built = None
                    $(.or_else(|| <$kind as Kind>::build(name, f).map(|r| r.map(Filter::$variant))))+;
                built
                    .unwrap_or_else(|| Err(format!("no filter kind builds `{}`", f.kind())))
                    .map_err(|why| BuildError {
                        name: name.to_string(),
                        why,
                    })
            }

            fn reads(&self) -> Reads {
                match self {
                    $(Filter::$variant(f) => f.reads(),)+
                }
            }

            fn request(&self, cx: &mut Cx<'_>, req: &mut Request<ClientBody>) -> Verdict {
                match self {
                    $(Filter::$variant(f) => f.request(cx, req),)+
                }
            }

            async fn wait(&self, cx: &mut Cx<'_>, req: &mut Request<ClientBody>) -> Verdict {
                match self {
                    $(Filter::$variant(f) => f.wait(cx, req).await,)+
                }
            }

            fn response(&self, cx: &mut Cx<'_>, resp: &mut Response<ProxyBody>) -> Later {
                match self {
                    $(Filter::$variant(f) => f.response(cx, resp),)+
                }
            }

            async fn wait_response(&self, cx: &mut Cx<'_>, resp: &mut Response<ProxyBody>) {
                match self {
                    $(Filter::$variant(f) => f.wait_response(cx, resp).await,)+
                }
            }
        }
    };
}

kinds! {
    Headers(headers::Headers),
    Rewrite(rewrite::Rewrite),
    Redirect(redirect::Redirect),
    Ip(ip::IpFilter),
    BodyLimit(BodyLimit),
    Cors(cors::Cors),
    ErrorPages(error_pages::ErrorPages),
    Compress(compress::Compress),
    BasicAuth(basic_auth::BasicAuth),
    ForwardAuth(forward_auth::ForwardAuth),
}

/// A filter the config holds but that cannot be built: a file it names (users, a page) that
/// no longer reads, or a regex this process cannot compile. The change is refused.
#[derive(Debug, thiserror::Error)]
#[error("filter `{name}`: {why}")]
pub struct BuildError {
    pub name: String,
    pub why: String,
}

/// Where a chain's request phases stopped.
pub enum Phase {
    /// Every filter let the request through.
    Passed,
    /// A filter answered.
    Answered(Box<Response<ProxyBody>>, Reason),
    /// A filter must wait: [`request_waiting`] goes on from it.
    Waiting,
}

/// A route's filters, in order; shared by every snapshot target of the route.
#[derive(Debug, Clone, Default)]
pub struct Chain(Option<Arc<Filters>>);

#[derive(Debug)]
struct Filters {
    list: Box<[Arc<Filter>]>,
    reads: Reads,
}

impl Chain {
    /// The filters `names` refers to, from those built for this config; a route's
    /// `https_redirect` (its `https_port`) is a redirect filter ahead of them.
    pub fn of(
        names: &[String],
        built: &std::collections::HashMap<String, Arc<Filter>>,
        https_redirect: Option<u16>,
    ) -> Chain {
        let https = https_redirect
            .map(|port| Arc::new(Filter::Redirect(redirect::Redirect::to_https(port))));
        if names.is_empty() && https.is_none() {
            return Chain(None);
        }
        // The config check made sure every name exists.
        let named = names.iter().filter_map(|n| built.get(n).cloned());
        let list: Box<[Arc<Filter>]> = https.into_iter().chain(named).collect();
        let reads = list.iter().fold(Reads::default(), |r, f| r.or(f.reads()));
        Chain(Some(Arc::new(Filters { list, reads })))
    }

    /// What the chain's filters read of the request as it arrived.
    pub fn reads(&self) -> Reads {
        self.0.as_ref().map_or(Reads::default(), |f| f.reads)
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// A tcp listener's connection from `ip`: whether every address list lets it through
    /// (the config allows only those kinds there).
    pub fn admits(&self, ip: IpAddr) -> bool {
        self.filters().iter().all(|f| match &**f {
            Filter::Ip(l) => l.passes(ip),
            _ => true,
        })
    }

    fn filters(&self) -> &[Arc<Filter>] {
        self.0.as_deref().map_or(&[], |f| &f.list)
    }
}

/// Runs the chain's request phases in order until one answers or must wait. Most requests
/// are decided here without a future: only a filter that waits on I/O needs one
/// ([`request_waiting`]), and it is boxed by the caller, so that chains that never wait pay
/// neither its size nor an allocation.
pub fn request(chain: &Chain, cx: &mut Cx<'_>, req: &mut Request<ClientBody>) -> Phase {
    let filters = chain.filters();
    while let Some(f) = filters.get(cx.entered) {
        cx.entered += 1;
        match f.request(cx, req) {
            Verdict::Continue => {}
            Verdict::Answer(resp, reason) => {
                // The answering filter made its answer whole; only those before it see it.
                cx.entered -= 1;
                return Phase::Answered(resp, reason);
            }
            Verdict::Wait => return Phase::Waiting,
        }
    }
    Phase::Passed
}

/// After [`request`] said [`Phase::Waiting`]: the waiting filter's `wait` phase, then the
/// rest of the chain. An answer, or `None` when every filter let the request through.
pub async fn request_waiting(
    chain: &Chain,
    cx: &mut Cx<'_>,
    req: &mut Request<ClientBody>,
) -> Option<(Box<Response<ProxyBody>>, Reason)> {
    loop {
        let f = &chain.filters()[cx.entered - 1];
        if let Verdict::Answer(resp, reason) = f.wait(cx, req).await {
            cx.entered -= 1;
            return Some((resp, reason));
        }
        match request(chain, cx, req) {
            Phase::Passed => return None,
            Phase::Answered(resp, reason) => return Some((resp, reason)),
            Phase::Waiting => {}
        }
    }
}

/// Runs the response phases of the filters whose request phase ran, last first, until one
/// must wait (then [`response_waiting`] goes on from it).
pub fn response(chain: &Chain, cx: &mut Cx<'_>, resp: &mut Response<ProxyBody>) -> Later {
    while cx.entered > 0 {
        cx.entered -= 1;
        if chain.filters()[cx.entered].response(cx, resp) == Later::Wait {
            return Later::Wait;
        }
    }
    Later::Done
}

/// After [`response`] said [`Later::Wait`]: the waiting filter's phase, then the rest.
pub async fn response_waiting(chain: &Chain, cx: &mut Cx<'_>, resp: &mut Response<ProxyBody>) {
    loop {
        chain.filters()[cx.entered].wait_response(cx, resp).await;
        if response(chain, cx, resp) == Later::Done {
            return;
        }
    }
}
