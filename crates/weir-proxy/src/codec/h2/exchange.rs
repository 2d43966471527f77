//! One request on an HTTP/2 upstream stream: the request head made HTTP/2 (`:scheme`,
//! `:authority`, no connection fields), the body sent as the stream's window allows
//! while the answer is awaited (a gRPC server may answer, and stream, before the
//! request's last message), the response head back within its [`HeadTimer`].
//!
//! Once the head is back, the response body ([`RecvBody`]) keeps sending what is left
//! of the request as it is read: a bidirectional gRPC call is one request whose two
//! bodies flow at once.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use h2::client::ResponseFuture;
use h2::SendStream;
use http::request::Parts;
use http::uri::{Authority, Scheme, Uri};
use http::{header, HeaderMap, Request, Response, Version};
use http_body::{Body, Frame, SizeHint};

use super::body::StreamBody;
use super::client::Stream;
use crate::codec::send::{HeadTimer, Payload};

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why an exchange on an HTTP/2 stream failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The connection or the stream failed: a reset, GOAWAY, a protocol error.
    #[error("HTTP/2: {0}")]
    H2(#[from] h2::Error),
    /// No response head in time.
    #[error("no response in time")]
    Timeout,
    /// The request's body broke off on the client's side while it streamed upstream.
    #[error("request body: {0}")]
    Body(BoxError),
    /// The request cannot be said in HTTP/2 (no host to make `:authority` from).
    #[error("request cannot be sent over HTTP/2: {0}")]
    Request(&'static str),
}

impl Error {
    /// The endpoint refused the stream unprocessed: REFUSED_STREAM (RFC 9113 §8.7), or
    /// a graceful GOAWAY whose last stream id is below this one's (h2 fails only those
    /// streams with the GOAWAY's NO_ERROR; the ones below it run on).
    pub fn refused_unprocessed(&self) -> bool {
        let Error::H2(e) = self else { return false };
        let remote = e.is_remote();
        match e.reason() {
            Some(h2::Reason::REFUSED_STREAM) => remote && e.is_reset(),
            Some(h2::Reason::NO_ERROR) => remote && e.is_go_away(),
            _ => false,
        }
    }
}

/// A failed send; `unsent` gives the payload back when the stream never opened (the
/// connection had already gone away), so the request can go out on another.
pub struct SendError<B> {
    pub error: Error,
    pub unsent: Option<Payload<B>>,
}

/// Sends the request on `stream` and waits for the response head.
pub async fn send_into<B, T>(
    stream: Stream,
    parts: &Parts,
    payload: Payload<B>,
    timer: HeadTimer,
    scheme: &Scheme,
) -> Result<Response<T>, SendError<B>>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
    T: From<RecvBody<B>>,
{
    let req = match request(parts, scheme) {
        Ok(r) => r,
        Err(why) => {
            return Err(SendError {
                error: Error::Request(why),
                unsent: None,
            })
        }
    };
    let mut stream = stream;
    let empty = match &payload {
        Payload::Bytes(b) => b.is_empty(),
        Payload::Stream(b) => b.is_end_stream(),
    };
    let (response, mut out) = match stream.send.send_request(req, empty) {
        Ok(x) => x,
        // Nothing went out: the connection is closing (GOAWAY) or gone.
        Err(e) if e.is_go_away() || e.is_io() || e.reason().is_some() => {
            stream.conn.retire();
            return Err(SendError {
                error: e.into(),
                unsent: Some(payload),
            });
        }
        // h2 refused the request itself (a field HTTP/2 does not allow): no connection
        // would take it.
        Err(e) => {
            tracing::debug!("HTTP/2 request refused by h2: {e}");
            return Err(SendError {
                error: Error::Request("a field HTTP/2 does not allow"),
                unsent: None,
            });
        }
    };
    let mut pump = match payload {
        Payload::Bytes(b) if !empty => {
            // Small (the replay buffer's size at most): h2 holds what the window does not
            // take yet.
            let _ = out.send_data(b, true);
            None
        }
        Payload::Bytes(_) => None,
        Payload::Stream(_) if empty => None,
        Payload::Stream(body) => Some(Pump { out, body }),
    };
    let mut response = response;
    let head = wait_head(&mut response, &mut pump, timer).await;
    match head {
        Ok(resp) => {
            let (head, recv) = resp.into_parts();
            let length = head
                .headers
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok());
            let body = RecvBody {
                recv: StreamBody::new(recv, length),
                pump,
                _stream: stream,
            };
            Ok(Response::from_parts(head, T::from(body)))
        }
        Err(error) => Err(SendError {
            error,
            unsent: None,
        }),
    }
}

/// The response head, while the request body goes out; within the timer's deadline,
/// which counts from the body's last byte (or its cap, while the body still streams).
async fn wait_head<B>(
    response: &mut ResponseFuture,
    pump: &mut Option<Pump<B>>,
    timer: HeadTimer,
) -> Result<Response<h2::RecvStream>, Error>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    let deadline = match pump {
        None => Some(timer.after(timer.started)),
        Some(_) => timer.cap,
    };
    let sleep = tokio::time::sleep_until(deadline.unwrap_or_else(far).into());
    tokio::pin!(sleep);
    poll_fn(|cx| {
        if let Some(p) = pump {
            match p.poll(cx) {
                Poll::Ready(Ok(())) => {
                    *pump = None;
                    sleep.as_mut().reset(timer.after(Instant::now()).into());
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => {}
            }
        }
        if let Poll::Ready(r) = Pin::new(&mut *response).poll(cx) {
            return Poll::Ready(r.map_err(Error::from));
        }
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Error::Timeout)),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

fn far() -> Instant {
    Instant::now() + std::time::Duration::from_secs(86_400 * 365)
}

/// The request head for HTTP/2: the URI absolute (h2 makes `:scheme`, `:authority` and
/// `:path` from it), `Host` folded into `:authority`, and the HTTP/1 connection fields
/// HTTP/2 forbids (RFC 9113 §8.2.2) left out (`TE` but for `trailers`, which gRPC needs).
fn request(parts: &Parts, scheme: &Scheme) -> Result<Request<()>, &'static str> {
    let host = parts
        .headers
        .get(header::HOST)
        .map(|h| h.as_bytes())
        .or_else(|| parts.uri.authority().map(|a| a.as_str().as_bytes()))
        .ok_or("no Host")?;
    let authority = Authority::try_from(host).map_err(|_| "Host is not a valid authority")?;
    let mut uri = Uri::builder().scheme(scheme.clone()).authority(authority);
    uri = match parts.uri.path_and_query() {
        Some(pq) => uri.path_and_query(pq.clone()),
        None => uri.path_and_query("/"),
    };
    let uri = uri.build().map_err(|_| "the URI")?;
    let mut headers = HeaderMap::with_capacity(parts.headers.len());
    for (name, value) in &parts.headers {
        let drop = matches!(
            *name,
            header::HOST
                | header::CONNECTION
                | header::TRANSFER_ENCODING
                | header::UPGRADE
                | header::PROXY_AUTHENTICATE
        ) || name == "keep-alive"
            || name == "proxy-connection"
            || (*name == header::TE && value != "trailers");
        if !drop {
            headers.append(name, value.clone());
        }
    }
    let mut req = Request::new(());
    *req.method_mut() = parts.method.clone();
    *req.uri_mut() = uri;
    *req.version_mut() = Version::HTTP_2;
    *req.headers_mut() = headers;
    Ok(req)
}

/// The rest of a streamed request body, going out as the stream's window allows.
pub struct Pump<B> {
    out: SendStream<Bytes>,
    body: B,
}

impl<B> Pump<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    /// Sends what the body has and the window takes; ready when the body has ended
    /// (END_STREAM sent). A body that breaks off resets the stream: the endpoint must
    /// not take what it got for the whole request.
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        loop {
            // Room first: a frame is only taken from the body once it can go out.
            if self.out.capacity() == 0 {
                self.out.reserve_capacity(16 * 1024);
                match std::task::ready!(self.out.poll_capacity(cx)) {
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Poll::Ready(Err(e.into())),
                    // The stream was reset or ended.
                    None => return Poll::Ready(Ok(())),
                }
                if self.out.capacity() == 0 {
                    continue;
                }
            }
            let frame = match std::task::ready!(Pin::new(&mut self.body).poll_frame(cx)) {
                None => {
                    let _ = self.out.send_data(Bytes::new(), true);
                    return Poll::Ready(Ok(()));
                }
                Some(Err(e)) => {
                    self.out.send_reset(h2::Reason::CANCEL);
                    return Poll::Ready(Err(Error::Body(e.into())));
                }
                Some(Ok(f)) => f,
            };
            match frame.into_data() {
                Ok(data) => {
                    let end = self.body.is_end_stream();
                    if let Err(e) = self.out.send_data(data, end) {
                        return Poll::Ready(Err(e.into()));
                    }
                    if end {
                        return Poll::Ready(Ok(()));
                    }
                }
                Err(frame) => {
                    if let Ok(t) = frame.into_trailers() {
                        let _ = self.out.send_trailers(t);
                        return Poll::Ready(Ok(()));
                    }
                }
            }
        }
    }
}

/// The response body of an HTTP/2 upstream stream; it holds the stream's claim on its
/// connection until dropped, and sends the rest of a streamed request as it is polled.
pub struct RecvBody<B> {
    recv: StreamBody,
    pump: Option<Pump<B>>,
    _stream: Stream,
}

impl<B> Body for RecvBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = self.get_mut();
        if let Some(p) = &mut this.pump {
            match p.poll(cx) {
                Poll::Ready(Ok(())) => this.pump = None,
                Poll::Ready(Err(e)) => {
                    this.pump = None;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Pending => {}
            }
        }
        match std::task::ready!(Pin::new(&mut this.recv).poll_frame(cx)) {
            Some(Err(e)) => Poll::Ready(Some(Err(e.into()))),
            Some(Ok(f)) => Poll::Ready(Some(Ok(f))),
            // The answer is complete; a request body still streaming is cut with the
            // stream (dropping its send half resets it), as the endpoint wants no more.
            None => {
                this.pump = None;
                Poll::Ready(None)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.recv.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.recv.size_hint()
    }
}
