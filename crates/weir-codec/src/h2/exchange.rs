//! One request on an HTTP/2 upstream stream: the request head made HTTP/2 (`:scheme`,
//! `:authority` from `Host`, no connection fields), the body sent as the stream's window
//! allows while the answer is awaited (a gRPC server may answer, and stream, before the
//! request's last message), the response head back within its [`HeadTimer`].
//!
//! Once the head is back, the response body ([`H2ResponseBody`], `body.rs`) keeps sending what
//! is left of the request as it is read: a bidirectional gRPC call is one request whose two
//! bodies flow at once.

use std::future::{poll_fn, Future};
use std::task::Poll;
use std::time::Instant;

use bytes::Bytes;
use http::request::Parts;
use http::uri::{Authority, Scheme};
use http::{header, Response};
use http_body::Body;
use weir_h2::client::{OpenError, Target};

pub use super::body::H2ResponseBody;
use super::client::{wait, Slot, Stream};
use super::opened::Opened;
use super::pump::Pump;
pub use super::stream_error::{BoxError, Error};
use crate::added::Added;
use crate::send::{HeadTimer, Payload};

/// A failed send; `unsent` gives the payload back when the stream never opened (the
/// connection had already gone away), so the request can go out on another.
pub struct SendError<B> {
    pub error: Error,
    pub unsent: Option<Payload<B>>,
}

/// Sends the request on `stream` (`parts`, then `added`'s fields) and waits for the response
/// head.
pub async fn send_into<B, T>(
    stream: Stream,
    parts: &Parts,
    added: &Added<'_>,
    payload: Payload<B>,
    timer: HeadTimer,
    scheme: &Scheme,
) -> Result<Response<T>, SendError<B>>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
    T: From<H2ResponseBody<B>>,
{
    let refuse = |why| SendError {
        error: Error::Request(why),
        unsent: None,
    };
    let host = parts
        .headers
        .get(header::HOST)
        .map(|h| h.as_bytes())
        .or_else(|| parts.uri.authority().map(|a| a.as_str().as_bytes()))
        .ok_or_else(|| refuse("no Host"))?;
    if Authority::try_from(host).is_err() {
        return Err(refuse("Host is not a valid authority"));
    }
    let target = Target {
        method: parts.method.as_str().as_bytes(),
        scheme: scheme.as_str().as_bytes(),
        authority: host,
        path: parts
            .uri
            .path_and_query()
            .map_or(&b"/"[..], |p| p.as_str().as_bytes()),
    };
    let empty = match &payload {
        Payload::Bytes(b) => b.is_empty(),
        Payload::Stream(b) => b.is_end_stream(),
    };
    let shared = &stream.conn;
    let opened = {
        let mut st = shared.conn.lock();
        let id = match st.ended {
            Some(_) => Err(OpenError::Closed),
            None => st
                .h2
                .send_request(target, &parts.headers, added.iter(), empty),
        };
        let id = match id {
            Ok(id) => id,
            // Nothing went out: the connection is closing (GOAWAY) or gone, or the
            // endpoint's stream limit is reached.
            Err(e) => {
                if e != OpenError::Full {
                    shared.retire();
                }
                let error = match &st.ended {
                    Some(why) => Error::Connection(why.clone()),
                    None => Error::Connection(e.to_string().into()),
                };
                return Err(SendError {
                    error,
                    unsent: Some(payload),
                });
            }
        };
        let mut slot = Slot::default();
        if let Payload::Bytes(b) = &payload {
            if !empty {
                // Small (the replay buffer's size at most): what the window does not take
                // yet, the connection's task sends as window comes.
                let n = st.h2.send_data(id, b, true);
                slot.pending = b.slice(n..);
                slot.pending_end = true;
            }
        }
        if matches!(payload, Payload::Bytes(_)) || empty {
            // The request is out with this write: its head's deadline is the connection
            // task's to keep. A body still to stream keeps its own timer (`wait_head`).
            st.head_deadline(&mut slot, timer.after(timer.started));
        }
        st.slots.insert(id, slot);
        if let Some(w) = st.output_waker() {
            w.wake();
        }
        drop(st);
        Opened {
            stream,
            id,
            done: false,
        }
    };
    let mut pump = match payload {
        Payload::Stream(body) if !empty => Some(Pump::new(body)),
        _ => None,
    };
    match wait_head(&opened, &mut pump, timer).await {
        Ok((head, end)) => {
            let (status, headers, length) = (head.status, head.headers, head.content_length);
            let body = H2ResponseBody::new(opened, pump, end, length);
            let mut resp = Response::new(T::from(body));
            *resp.status_mut() = status;
            *resp.headers_mut() = headers;
            Ok(resp)
        }
        Err(error) => Err(SendError {
            error,
            unsent: None,
        }),
    }
}

/// The response head (and whether it ended the stream), while the request body goes out;
/// within the timer's deadline, which counts from the body's last byte (or its cap, while
/// the body still streams).
async fn wait_head<B>(
    opened: &Opened,
    pump: &mut Option<Pump<B>>,
    timer: HeadTimer,
) -> Result<(weir_h2::client::ResponseHead, bool), Error>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    // Without a body to stream, the connection's task keeps the deadline (`Slot::deadline`).
    let mut sleep = pump.is_some().then(|| {
        Box::pin(tokio::time::sleep_until(
            timer.cap.unwrap_or_else(far).into(),
        ))
    });
    poll_fn(|cx| {
        if let Some(p) = pump {
            match p.poll(cx, opened) {
                Poll::Ready(Ok(())) => {
                    *pump = None;
                    if let Some(s) = sleep.as_mut() {
                        s.as_mut().reset(timer.after(Instant::now()).into());
                    }
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => {}
            }
        }
        {
            let mut st = opened.conn().lock();
            let Some(slot) = st.slots.get_mut(&opened.id) else {
                return Poll::Ready(Err(Error::Connection("the stream is gone".into())));
            };
            if let Some(head) = slot.head.take() {
                let end = slot.end && slot.parts.is_empty();
                return Poll::Ready(Ok((head, end)));
            }
            if let Some(f) = &slot.failed {
                return Poll::Ready(Err(f.into()));
            }
            wait(slot, cx);
        }
        match sleep.as_mut().map(|s| s.as_mut().poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(Err(Error::Timeout)),
            _ => Poll::Pending,
        }
    })
    .await
}

fn far() -> Instant {
    Instant::now() + std::time::Duration::from_secs(86_400 * 365)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use http::Request;
    use http_body_util::Full;

    use super::*;
    use crate::h2::client::handshake;

    /// A request the connection ended before writing (the endpoint had closed it, without
    /// GOAWAY) is told apart from one the endpoint may have processed, so that even a POST
    /// can go again on another connection.
    #[tokio::test]
    async fn a_request_never_written_is_unsent_not_maybe_delivered() {
        let (ours, theirs) = tokio::io::duplex(4096);
        drop(theirs);
        let stream = handshake(ours, 10, 0, Duration::from_secs(60), None);
        let (parts, ()) = Request::post("http://a.test/orders")
            .body(())
            .unwrap()
            .into_parts();
        let timer = HeadTimer::from(Instant::now() + Duration::from_secs(10));
        let payload = Payload::Bytes(Bytes::from_static(b"{}"));
        let r = send_into::<Full<Bytes>, H2ResponseBody<Full<Bytes>>>(
            stream,
            &parts,
            &Added::NONE,
            payload,
            timer,
            &Scheme::HTTP,
        )
        .await;
        let Err(e) = r else {
            panic!("an answer on a closed connection")
        };
        assert!(matches!(e.error, Error::Unsent(_)), "{:?}", e.error);
        assert!(e.error.refused_unprocessed());
    }
}
