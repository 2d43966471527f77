//! One HTTP/2 connection of the gRPC backend: hyper's h2 server (prior knowledge, or
//! inside TLS) in front of the Echo and Health services. This layer does what tonic's
//! handlers cannot see or set: it counts and logs calls, hands the `:authority` to the
//! handlers, and adds `x-echo-trailer` to the trailers of a successful response.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body::{Body, Frame};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite};
use tonic::codegen::Service as _;
use tonic::Status;
use tonic_health::pb::health_server::HealthServer;
use tonic_health::server::HealthService;

use super::calls::{CallRecord, GrpcCounters};
use super::echo::echo_server::EchoServer;
use super::service::{Authority, EchoService, Trailer, TRAILER};

const HEALTH_PREFIX: &str = "/grpc.health.v1.Health/";

/// Both services, shared by every connection.
#[derive(Clone)]
pub(crate) struct Services {
    pub(crate) echo: EchoServer<EchoService>,
    pub(crate) health: HealthServer<HealthService>,
}

/// Serves one connection (already through TLS, if any) until the peer goes away.
pub(crate) async fn serve<S>(io: S, shared: Arc<GrpcCounters>, services: Services)
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let conn_id = shared.connections.fetch_add(1, Relaxed);
    shared.open.fetch_add(1, Relaxed);
    let svc = Dispatch {
        shared: shared.clone(),
        services,
        conn_id,
    };
    let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(io), svc)
        .await;
    shared.open.fetch_sub(1, Relaxed);
}

struct Dispatch {
    shared: Arc<GrpcCounters>,
    services: Services,
    conn_id: u64,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = Result<T, Infallible>> + Send>>;

impl hyper::service::Service<Request<Incoming>> for Dispatch {
    type Response = Response<WithTrailer>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response>;

    fn call(&self, mut req: Request<Incoming>) -> Self::Future {
        let authority = req.uri().authority().map(|a| a.to_string()).or_else(|| {
            let host = req.headers().get(http::header::HOST)?;
            host.to_str().ok().map(str::to_owned)
        });
        let path = req.uri().path().to_owned();
        let health = path.starts_with(HEALTH_PREFIX);
        let s = &self.shared;
        if health {
            s.health_checks.fetch_add(1, Relaxed);
        } else {
            s.calls.fetch_add(1, Relaxed);
        }
        if s.record_log {
            s.log.lock().unwrap().push(CallRecord {
                path,
                authority: authority.clone(),
                headers: req.headers().clone(),
                conn_id: self.conn_id,
            });
        }
        req.extensions_mut()
            .insert(Authority(authority.unwrap_or_default()));
        let fut = if health {
            self.services.health.clone().call(req)
        } else {
            self.services.echo.clone().call(req)
        };
        Box::pin(async move {
            let (parts, body) = fut.await?.into_parts();
            let trailer = parts.extensions.get::<Trailer>().cloned();
            Ok(Response::from_parts(parts, WithTrailer { body, trailer }))
        })
    }
}

/// tonic's response body, with `x-echo-trailer` added to its trailers when asked.
pub(crate) struct WithTrailer {
    body: tonic::body::Body,
    trailer: Option<Trailer>,
}

impl Body for WithTrailer {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let frame = ready!(Pin::new(&mut self.body).poll_frame(cx));
        Poll::Ready(match frame {
            Some(Ok(f)) if f.is_trailers() => {
                let mut t = f.into_trailers().unwrap_or_default();
                if let Some(v) = self.trailer.as_ref().and_then(Trailer::take) {
                    t.insert(TRAILER, v);
                }
                Some(Ok(Frame::trailers(t)))
            }
            other => other,
        })
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
