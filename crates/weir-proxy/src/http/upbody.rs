//! The request body sent upstream. Small bodies are read whole first, so that
//! a failed try can be replayed on another connection; larger ones stream
//! through and cannot be retried once sent.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};

pub enum UpBody {
    /// Held in memory: a try may be repeated with a clone.
    Full(Option<Bytes>),
    /// Streamed from the client as it arrives.
    Stream(Incoming),
    /// Already-read bytes, then the rest of the stream.
    Chain { head: Option<Bytes>, rest: Incoming },
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

/// Reads up to `limit` bytes of the body to decide whether it can be replayed.
pub async fn prepare(mut body: Incoming, limit: usize) -> Result<Prepared, hyper::Error> {
    if body.is_end_stream() {
        return Ok(Prepared::Replayable(Bytes::new()));
    }
    if let Some(n) = body.size_hint().exact() {
        if n as usize > limit {
            return Ok(Prepared::Once(UpBody::Stream(body)));
        }
    }
    let mut buf = BytesMut::new();
    while let Some(frame) = body.frame().await {
        // Trailers are dropped: they are rare on requests, and hop-by-hop
        // framing is ours to choose.
        if let Ok(data) = frame?.into_data() {
            buf.extend_from_slice(&data);
            if buf.len() > limit {
                return Ok(Prepared::Once(UpBody::Chain {
                    head: Some(buf.freeze()),
                    rest: body,
                }));
            }
        }
    }
    Ok(Prepared::Replayable(buf.freeze()))
}

impl Body for UpBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match self.get_mut() {
            UpBody::Full(data) => Poll::Ready(data.take().map(|d| Ok(Frame::data(d)))),
            UpBody::Stream(inner) => Pin::new(inner).poll_frame(cx),
            UpBody::Chain { head, rest } => match head.take() {
                Some(h) => Poll::Ready(Some(Ok(Frame::data(h)))),
                None => Pin::new(rest).poll_frame(cx),
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            UpBody::Full(data) => data.is_none(),
            UpBody::Stream(inner) => inner.is_end_stream(),
            UpBody::Chain { head, rest } => head.is_none() && rest.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            UpBody::Full(data) => SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64)),
            UpBody::Stream(inner) => inner.size_hint(),
            UpBody::Chain { head, rest } => {
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
