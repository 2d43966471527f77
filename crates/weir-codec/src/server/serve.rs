//! What a client connection's codec asks of the pipeline, in one vocabulary for every
//! protocol: serve a request, note a refused one, say whether an answer switches the
//! request to another protocol and carry it once it has, and note a request arriving (for
//! the client timeouts). The pipeline implements [`Serve`] once; each server codec drives a
//! connection and calls it per request, statically (generic, never `dyn`: this is every
//! request's path).

use std::fmt::Display;
use std::future::Future;

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;

use super::handoff::Handoff;
use crate::h2::tunnel::Tunnel;

/// What serves the requests of a client connection.
pub trait Serve: Sync {
    /// The request body the pipeline takes. Each codec makes it from its own body where it
    /// builds the request (a codec-neutral body costs no extra move of the request), so each
    /// codec asks for a `From` its body: `h1::server::ReqBody`,
    /// `h2::request_body::RequestBody` (and `Default`, for an HTTP/2 extended CONNECT, whose
    /// stream is the tunnel).
    type ReqBody;
    type Body: Body<Data = Bytes> + Unpin + Send;

    /// Serves one request: its answer.
    fn call(
        &self,
        req: Request<Self::ReqBody>,
    ) -> impl Future<Output = Response<Self::Body>> + Send + '_;

    /// Bytes of a request arrived (an HTTP/1.1 head's, an HTTP/2 stream's opening): the
    /// connection is not idle (the client timeouts).
    #[inline]
    fn request_arriving(&self) {}

    /// A request the codec refused before the pipeline saw it, answered with `status`
    /// because of `why`: for the pipeline's counts and logs. `req` is the request when its
    /// head could be read (an HTTP/2 expectation weir cannot meet), `None` when the head
    /// itself was refused (HTTP/1.1's 400, 431, ...).
    fn refused(&self, _status: u16, _why: &dyn Display, _req: Option<&Request<Self::ReqBody>>) {}

    /// The answer to a request refused with `status`, where the codec answers with a
    /// message (HTTP/2); `None`: the status alone. HTTP/1.1 writes its own refusal (weir's
    /// error text, then it closes), since it cannot read the head it refuses.
    fn refusal(&self, _status: u16) -> Option<Response<Self::Body>> {
        None
    }

    /// Whether a `101` answer with this body switches the request to the protocol it asked
    /// for (the pipeline made the switch upstream): the codec then writes its acceptance and
    /// hands the client's side to [`Serve::switched`].
    fn switches(&self, _body: &Self::Body) -> bool {
        false
    }

    /// Carries a switched request until it ends: `body` is the `101`'s, `client` the
    /// client's side of it.
    fn switched(
        &self,
        _body: Self::Body,
        _client: Switched,
    ) -> impl Future<Output = ()> + Send + '_ {
        async {}
    }
}

/// The client's side of a request that switched protocols: no longer HTTP, only bytes.
pub enum Switched {
    /// The whole connection (an HTTP/1.1 upgrade's `101`): its stream, with what the
    /// client sent behind the request head (the new protocol's first bytes).
    Connection(Handoff),
    /// One stream of a connection that carries several (an HTTP/2 extended CONNECT,
    /// RFC 8441), as a byte stream.
    Stream(Tunnel),
}
