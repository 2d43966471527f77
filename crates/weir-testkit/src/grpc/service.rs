//! The `weir.test.Echo` methods. Each honours the request's `delay_ms` (sleep, then
//! answer), `status_code` (answer that status, message `asked`), `reply_bytes` (padding)
//! and `set_trailer` (trailing metadata `x-echo-trailer`), so a test can make a backend
//! slow, failing, large or trailer-bearing call by call.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use http::HeaderValue;
use tonic::metadata::MetadataValue;
use tonic::{Code, Request, Response, Status, Streaming};

use super::echo::echo_server::Echo;
use super::messages::{EchoReply, EchoRequest};

/// What the backend saw of the call, carried into every reply.
#[derive(Clone, Default)]
pub(crate) struct Seen {
    grpc_timeout: String,
    authority: String,
}

/// The request's `:authority` (or `host`), put in its extensions by the connection
/// layer: tonic's `Request` keeps extensions but not the URI.
#[derive(Clone)]
pub(crate) struct Authority(pub(crate) String);

/// The value for `x-echo-trailer`, put in the response's extensions for the connection
/// layer to add to the trailers (tonic has no trailing metadata on success). A slot, so
/// a bidi stream can fill it from a request that arrives after the response head.
#[derive(Clone, Default)]
pub(crate) struct Trailer(pub(crate) Arc<Mutex<Option<HeaderValue>>>);

impl Trailer {
    fn set(&self, value: &str) {
        if !value.is_empty() {
            if let Ok(v) = HeaderValue::from_str(value) {
                *self.0.lock().unwrap() = Some(v);
            }
        }
    }

    pub(crate) fn take(&self) -> Option<HeaderValue> {
        self.0.lock().unwrap().take()
    }
}

pub(crate) const TRAILER: &str = "x-echo-trailer";

impl Seen {
    fn of<T>(req: &Request<T>) -> Seen {
        Seen {
            grpc_timeout: req
                .metadata()
                .get("grpc-timeout")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned(),
            authority: req
                .extensions()
                .get::<Authority>()
                .map(|a| a.0.clone())
                .unwrap_or_default(),
        }
    }
}

type ReplyStream = Pin<Box<dyn Stream<Item = Result<EchoReply, Status>> + Send>>;

#[derive(Clone)]
pub(crate) struct EchoService {
    pub(crate) name: Arc<str>,
}

impl EchoService {
    fn reply(&self, seen: &Seen, message: String, count: u64, size: u64) -> EchoReply {
        let mut r = EchoReply {
            message,
            server: self.name.to_string(),
            grpc_timeout: seen.grpc_timeout.clone(),
            authority: seen.authority.clone(),
            padding: Vec::new(),
            count,
        };
        r.pad_to(size);
        r
    }
}

/// The status a request asks for, if any (with its trailer, as error metadata).
fn asked(r: &EchoRequest) -> Result<(), Status> {
    if r.status_code == 0 {
        return Ok(());
    }
    let mut s = Status::new(Code::from(r.status_code), "asked");
    if !r.set_trailer.is_empty() {
        if let Ok(v) = MetadataValue::try_from(r.set_trailer.as_str()) {
            s.metadata_mut().insert(TRAILER, v);
        }
    }
    Err(s)
}

async fn delay(ms: u64) {
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

/// `resp` with `x-echo-trailer: trailer` to add at the end, if not empty.
fn with_trailer<T>(mut resp: Response<T>, trailer: &str) -> Response<T> {
    let slot = Trailer::default();
    slot.set(trailer);
    resp.extensions_mut().insert(slot);
    resp
}

#[tonic::async_trait]
impl Echo for EchoService {
    async fn unary(&self, req: Request<EchoRequest>) -> Result<Response<EchoReply>, Status> {
        let seen = Seen::of(&req);
        let r = req.into_inner();
        delay(r.delay_ms).await;
        asked(&r)?;
        let reply = self.reply(&seen, r.message, 0, r.reply_bytes);
        Ok(with_trailer(Response::new(reply), &r.set_trailer))
    }

    type ServerStreamStream = ReplyStream;

    /// `count` replies `<message> <i>` (i from 0), each after `delay_ms`; then the asked
    /// status, if any, in the trailers after the data.
    async fn server_stream(
        &self,
        req: Request<EchoRequest>,
    ) -> Result<Response<ReplyStream>, Status> {
        let (seen, svc) = (Seen::of(&req), self.clone());
        let r = req.into_inner();
        let trailer = r.set_trailer.clone();
        let stream = futures_util::stream::unfold(Some(0u64), move |i| {
            let (seen, svc, r) = (seen.clone(), svc.clone(), r.clone());
            async move {
                let i = i?;
                if i == r.count {
                    return asked(&r).err().map(|s| (Err(s), None));
                }
                delay(r.delay_ms).await;
                let msg = format!("{} {i}", r.message);
                Some((Ok(svc.reply(&seen, msg, i, r.reply_bytes)), Some(i + 1)))
            }
        });
        Ok(with_trailer(Response::new(Box::pin(stream)), &trailer))
    }

    /// Reads every request, then answers once: the messages joined by `,`, `count` =
    /// how many; the largest `delay_ms` and the first non-zero `status_code` apply.
    async fn client_stream(
        &self,
        req: Request<Streaming<EchoRequest>>,
    ) -> Result<Response<EchoReply>, Status> {
        let seen = Seen::of(&req);
        let mut input = req.into_inner();
        let (mut messages, mut last) = (Vec::new(), EchoRequest::default());
        while let Some(r) = input.message().await? {
            messages.push(r.message.clone());
            last.delay_ms = last.delay_ms.max(r.delay_ms);
            if last.status_code == 0 {
                last.status_code = r.status_code;
            }
            last.reply_bytes = r.reply_bytes;
            if !r.set_trailer.is_empty() {
                last.set_trailer = r.set_trailer;
            }
        }
        delay(last.delay_ms).await;
        asked(&last)?;
        let n = messages.len() as u64;
        let reply = self.reply(&seen, messages.join(","), n, last.reply_bytes);
        Ok(with_trailer(Response::new(reply), &last.set_trailer))
    }

    type BidiStream = ReplyStream;

    /// Echoes each request as it arrives (`count` = its index), after its `delay_ms`;
    /// a request with a `status_code` ends the call with that status; the last
    /// `set_trailer` seen goes in the trailers.
    async fn bidi(
        &self,
        req: Request<Streaming<EchoRequest>>,
    ) -> Result<Response<ReplyStream>, Status> {
        let (seen, svc) = (Seen::of(&req), self.clone());
        let trailer = Trailer::default();
        let slot = trailer.clone();
        let stream = req
            .into_inner()
            .enumerate()
            .then(move |(i, r)| {
                let (seen, svc, slot) = (seen.clone(), svc.clone(), slot.clone());
                async move {
                    let r = r?;
                    slot.set(&r.set_trailer);
                    delay(r.delay_ms).await;
                    asked(&r)?;
                    Ok(svc.reply(&seen, r.message, i as u64, r.reply_bytes))
                }
            })
            // Stop after the first error: it becomes the call's status.
            .scan(false, |failed, item| {
                let out = (!*failed).then_some(item);
                if let Some(Err(_)) = &out {
                    *failed = true;
                }
                futures_util::future::ready(out)
            });
        let mut resp = Response::new(Box::pin(stream) as ReplyStream);
        resp.extensions_mut().insert(trailer);
        Ok(resp)
    }
}
