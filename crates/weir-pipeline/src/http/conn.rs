//! Serving one client connection: weir-codec's server side (`server::run`: the protocol
//! ALPN or the first bytes name, then its codec) with `forward::handle` as what serves
//! each request, plus what the listener's `watch` tells it: its client timeouts (see
//! `conn_state`), graceful close on drain, and a hard stop when the drain grace runs out.
//! Nothing here names a protocol.

use std::fmt::Display;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::BytesMut;
use http::{Request, Response};
use tokio_util::sync::CancellationToken;

pub use crate::http::conn_ctx::ClientLimits;
use crate::http::conn_ctx::ConnCtx;
use crate::http::forward::{handle, refused, refused_request};
use crate::http::upgrade;
use crate::http::watch::{drained_out, must_end, Seated, Watch};
use weir_codec::client_body::ClientBody;
use weir_codec::h1::server::{Idle, Pause};
use weir_codec::server::{self, Limits, Serve, Switched};
use weir_http::body::ProxyBody;
use weir_http::error::error_response_as;
use weir_metrics::reason::Reason;
use weir_metrics::Held;
use weir_transport::ClientStream;

/// The proxy as every server codec's [`Serve`].
struct Proxy(Arc<ConnCtx>);

impl Serve for Proxy {
    type ReqBody = ClientBody;
    type Body = ProxyBody;

    fn call(
        &self,
        req: Request<ClientBody>,
    ) -> impl Future<Output = Response<ProxyBody>> + Send + '_ {
        handle(&self.0, req)
    }

    #[inline]
    fn request_arriving(&self) {
        self.0.conn.state.on_read();
    }

    fn refused(&self, status: u16, why: &dyn Display, req: Option<&Request<ClientBody>>) {
        match req {
            Some(req) => refused_request(&self.0, status, why, req),
            None => refused(&self.0, status, why),
        }
    }

    fn refusal(&self, status: u16) -> Option<Response<ProxyBody>> {
        Some(error_response_as(status, Reason::BadRequest))
    }

    fn switches(&self, body: &ProxyBody) -> bool {
        body.is_upgraded()
    }

    fn switched(&self, body: ProxyBody, client: Switched) -> impl Future<Output = ()> + Send + '_ {
        upgrade::relay(&self.0, body, client)
    }
}

/// Where the serving side of a connection is: one owned value the connection's future
/// polls, rather than an `async` block, whose awaits kept the values each matched on in
/// places of their own (200 bytes of that side's state then; the whole connection's
/// future is 128 now, `-Zprint-type-sizes`).
enum Serving<'a, F, G> {
    /// The protocol's requests from the start: its selection, then its codec.
    First(Pin<Box<F>>),
    /// An HTTP/1.1 connection between requests: its socket's halves and nothing else.
    Waiting(Idle),
    /// HTTP/1.1 requests again, from the first bytes of the one that ended the wait.
    Again(Pin<Box<G>>),
    /// A request switched protocols (`101`): the relay that carries it.
    Relay(Pin<Box<dyn Future<Output = ()> + Send + 'a>>),
    Over,
}

impl<'a, F, G> Serving<'a, F, G>
where
    F: Future<Output = Option<Pause<'a>>>,
    G: Future<Output = Option<Pause<'a>>>,
{
    /// What comes after serving stopped with `pause`. The box that served is freed when
    /// this replaces it, before the connection waits.
    fn after(pause: Option<Pause<'a>>) -> Self {
        match pause {
            Some(Pause::Idle(idle)) => Serving::Waiting(idle),
            Some(Pause::Relay(relay)) => Serving::Relay(relay),
            None => Serving::Over,
        }
    }

    /// Polls until the connection is over or must wait; `resume` starts serving again
    /// from a request's first bytes (`Idle::resume`, whose type has no name to write).
    fn poll(
        &mut self,
        cx: &mut Context<'_>,
        proxy: &'a Proxy,
        resume: impl Fn(Idle, BytesMut, &'a Proxy) -> G,
    ) -> Poll<()> {
        loop {
            match self {
                Serving::First(serve) => *self = Serving::after(ready!(serve.as_mut().poll(cx))),
                Serving::Again(serve) => *self = Serving::after(ready!(serve.as_mut().poll(cx))),
                Serving::Waiting(idle) => {
                    let read = ready!(idle.poll_arrival(cx, proxy));
                    let Serving::Waiting(idle) = std::mem::replace(self, Serving::Over) else {
                        unreachable!("matched above")
                    };
                    let Some(read) = read else {
                        idle.close();
                        return Poll::Ready(());
                    };
                    *self = Serving::Again(Box::pin(resume(idle, read, proxy)));
                }
                Serving::Relay(relay) => return relay.as_mut().poll(cx),
                Serving::Over => return Poll::Ready(()),
            }
        }
    }
}

/// Requests a client may have open at once on a connection that carries several (HTTP/2).
const MAX_STREAMS: u32 = 128;

/// Serves a client connection until it closes, is closed by a drain or a client timeout,
/// or is cut when the drain grace runs out (those come from the listener's `watch`,
/// whose seat the connection takes at its first poll). `open` (the open-connections
/// gauge) is held as long as the connection.
///
/// The future is the connection's whole state while it waits, kept small: made here (a
/// plain function, not an `async fn`, whose arguments and locals would keep places of
/// their own beside the block's copies), owning what it needs. Between requests an
/// HTTP/1.1 connection is only its `Idle` (its socket's halves) and its seat; the codec's
/// future serving requests is boxed when a request's first bytes come and freed when the
/// connection waits again.
pub fn serve(
    stream: ClientStream,
    ctx: Arc<ConnCtx>,
    drain: CancellationToken,
    watch: Arc<Watch>,
    open: Held,
) -> impl Future<Output = ()> + Send {
    let proxy = Proxy(ctx);
    async move {
        // Owned by the block and used in place: moved into locals, each would take a
        // second place in every connection's state.
        let _ = &open;
        let limits = Limits {
            max_head: proxy.0.limits.max_header_bytes,
            max_streams: MAX_STREAMS,
            stall: proxy.0.limits.idle_timeout,
        };
        let proxy = &proxy;
        let first = server::run(stream, proxy, &proxy.0.ctl, &drain, limits);
        let mut serving = Serving::First(Box::pin(first));
        let mut seat = Seated::new(&watch);
        poll_fn(move |cx| {
            seat.take(&proxy.0, cx.waker());
            if must_end(&proxy.0.ctl) {
                return Poll::Ready(());
            }
            // Served first: a request whose bytes are here when the drain comes is
            // answered (its response closing the connection), not dropped.
            match serving.poll(cx, proxy, resume) {
                Poll::Pending if drained_out(&proxy.0.ctl) => Poll::Ready(()),
                done => done,
            }
        })
        .await
    }
}

/// Serves an HTTP/1.1 connection's requests again from the first bytes of the next
/// (`Serving::poll`'s `resume`: a function, not a closure, so that it takes no place in
/// the connection's state).
fn resume(idle: Idle, read: BytesMut, proxy: &Proxy) -> impl Future<Output = Option<Pause<'_>>> {
    let max_head = proxy.0.limits.max_header_bytes;
    idle.resume(read, proxy, &proxy.0.ctl, max_head)
}
