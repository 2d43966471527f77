//! The request body sent upstream. Small bodies are read whole first, so that
//! a failed try can be replayed on another connection; larger ones stream
//! through and cannot be retried once sent.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures_util::FutureExt;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;

use crate::codec::client_body::{ClientBody, ClientBodyError};

/// A body too large to replay (replayable ones go upstream as bytes).
pub enum UpBody {
    /// Streamed from the client as it arrives.
    Stream(ClientBody, Option<Arc<AtomicU64>>),
    /// Already-read bytes, then the rest of the stream.
    Chain {
        head: Option<Bytes>,
        rest: ClientBody,
        count: Option<Arc<AtomicU64>>,
    },
}

impl UpBody {
    /// Adds the streamed bytes to `counter` (an endpoint's bytes_in).
    pub fn counting(self, counter: Arc<AtomicU64>) -> Self {
        match self {
            UpBody::Stream(inner, _) => UpBody::Stream(inner, Some(counter)),
            UpBody::Chain { head, rest, .. } => UpBody::Chain {
                head,
                rest,
                count: Some(counter),
            },
        }
    }
}

fn count(frame: &Poll<Option<Result<Frame<Bytes>, ClientBodyError>>>, c: &Option<Arc<AtomicU64>>) {
    if let (Poll::Ready(Some(Ok(f))), Some(c)) = (frame, c) {
        if let Some(d) = f.data_ref() {
            c.fetch_add(d.len() as u64, Relaxed);
        }
    }
}

/// A request body made ready for the tries.
pub enum Prepared {
    /// Fits the replay buffer.
    Replayable(Bytes),
    /// Too large (or unknown and growing past the buffer): one try only.
    Once(UpBody),
}

impl Prepared {
    pub fn replayable(&self) -> bool {
        matches!(self, Prepared::Replayable(_))
    }
}

/// Reads up to `limit` bytes of the body to decide whether it can be replayed. Without
/// `wait`, only what has already arrived is read: a streaming call's client may send its
/// body's rest only after answers came back (gRPC), and waiting for it would deadlock.
pub async fn prepare(
    mut body: ClientBody,
    limit: usize,
    wait: bool,
) -> Result<Prepared, ClientBodyError> {
    if body.is_end_stream() {
        return Ok(Prepared::Replayable(Bytes::new()));
    }
    if let Some(n) = body.size_hint().exact() {
        if n as usize > limit {
            return Ok(Prepared::Once(UpBody::Stream(body, None)));
        }
    }
    let mut buf = BytesMut::new();
    let whole = body.size_hint().exact();
    loop {
        let frame = match wait {
            true => body.frame().await,
            false => match body.frame().now_or_never() {
                Some(f) => f,
                // The rest is still on its way: stream it, once.
                None => {
                    return Ok(Prepared::Once(match buf.is_empty() {
                        true => UpBody::Stream(body, None),
                        false => UpBody::Chain {
                            head: Some(buf.freeze()),
                            rest: body,
                            count: None,
                        },
                    }))
                }
            },
        };
        let Some(frame) = frame else { break };
        // Trailers are dropped: they are rare on requests, and hop-by-hop
        // framing is ours to choose.
        if let Ok(data) = frame?.into_data() {
            // The usual small body comes in one piece: no copy.
            if buf.is_empty() && whole == Some(data.len() as u64) {
                return Ok(Prepared::Replayable(data));
            }
            buf.extend_from_slice(&data);
            if buf.len() > limit {
                return Ok(Prepared::Once(UpBody::Chain {
                    head: Some(buf.freeze()),
                    rest: body,
                    count: None,
                }));
            }
        }
    }
    Ok(Prepared::Replayable(buf.freeze()))
}

impl Body for UpBody {
    type Data = Bytes;
    type Error = ClientBodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, ClientBodyError>>> {
        match self.get_mut() {
            UpBody::Stream(inner, c) => {
                let f = Pin::new(inner).poll_frame(cx);
                count(&f, c);
                f
            }
            UpBody::Chain {
                head,
                rest,
                count: c,
            } => match head.take() {
                Some(h) => {
                    if let Some(c) = c {
                        c.fetch_add(h.len() as u64, Relaxed);
                    }
                    Poll::Ready(Some(Ok(Frame::data(h))))
                }
                None => {
                    let f = Pin::new(rest).poll_frame(cx);
                    count(&f, c);
                    f
                }
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            UpBody::Stream(inner, _) => inner.is_end_stream(),
            UpBody::Chain { head, rest, .. } => head.is_none() && rest.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            UpBody::Stream(inner, _) => inner.size_hint(),
            UpBody::Chain { head, rest, .. } => {
                let h = head.as_ref().map_or(0, |d| d.len() as u64);
                let r = rest.size_hint();
                let mut s = SizeHint::new();
                s.set_lower(r.lower() + h);
                if let Some(u) = r.upper() {
                    s.set_upper(u + h);
                }
                s
            }
        }
    }
}
