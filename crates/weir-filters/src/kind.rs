//! What a route filter kind is: a type built from its settings in the config, with the
//! phases it takes part in. Every phase has a default that lets the request or answer
//! through untouched, so a kind implements only what it does. The `Filter` enum in `lib.rs`
//! dispatches to these statically (one `match` per phase, generated from the list of kinds).

use std::future::Future;

use http::{Request, Response};
use weir_codec::client_body::ClientBody;
use weir_http::body::ProxyBody;

use crate::cx::{Cx, Reads};
use crate::verdict::{Later, Verdict};

pub trait Kind: Sized + Send + Sync + std::fmt::Debug + 'static {
    /// This kind built from `f` when `f` is of this kind (`None` otherwise): regexes
    /// compiled, files read. An error refuses the config change.
    fn build(name: &str, f: &weir_config::Filter) -> Option<Result<Self, String>>;

    /// What it reads of the request as it arrived, through [`Cx::uri`] and [`Cx::host`]: a
    /// filter that reads either must say so (a debug build panics where one does not; a
    /// release build would find it empty).
    fn reads(&self) -> Reads {
        Reads::default()
    }

    /// The request phase, decided without waiting; a filter that must wait on something (a
    /// password being verified, an auth service) says [`Verdict::Wait`] and its `wait` runs
    /// next.
    fn request(&self, _cx: &mut Cx<'_>, _req: &mut Request<ClientBody>) -> Verdict {
        Verdict::Continue
    }

    /// The rest of a request phase that said [`Verdict::Wait`].
    fn wait(
        &self,
        _cx: &mut Cx<'_>,
        _req: &mut Request<ClientBody>,
    ) -> impl Future<Output = Verdict> + Send {
        async { Verdict::Continue }
    }

    /// The response phase, done without waiting unless it says [`Later::Wait`] (then
    /// `wait_response` runs next).
    fn response(&self, _cx: &mut Cx<'_>, _resp: &mut Response<ProxyBody>) -> Later {
        Later::Done
    }

    /// The rest of a response phase that said [`Later::Wait`].
    fn wait_response(
        &self,
        _cx: &mut Cx<'_>,
        _resp: &mut Response<ProxyBody>,
    ) -> impl Future<Output = ()> + Send {
        async {}
    }
}
