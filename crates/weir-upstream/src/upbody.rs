//! The request body sent upstream. Small bodies are read whole first, so that
//! a failed try can be replayed on another connection; larger ones stream
//! through and cannot be retried once sent.
//!
//! A body that must not be waited for (a gRPC call's: its client may send the
//! rest only after answers came back) streams at once, and keeps a copy of what
//! it sent while that fits the replay buffer ([`Tee`]): a unary call, complete
//! by the time its try fails, is then replayed like a body read whole first.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures_util::FutureExt;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;

use weir_codec::client_body::{ClientBody, ClientBodyError};

/// A body too large to replay, or not waited for (replayable ones go upstream as bytes).
pub struct UpBody {
    /// Already-read bytes, sent first.
    head: Option<Bytes>,
    /// The rest, streamed from the client as it arrives.
    rest: ClientBody,
    /// An endpoint's bytes_in, counting what is streamed.
    count: Option<Arc<AtomicU64>>,
    tee: Option<Arc<Tee>>,
}

/// What a body not waited for has sent, kept while it fits `limit`.
#[derive(Debug)]
pub struct Tee {
    limit: usize,
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    chunks: Vec<Bytes>,
    len: usize,
    /// Past `limit`: nothing is kept any more.
    over: bool,
    /// The body's end was seen.
    complete: bool,
}

impl Tee {
    fn new(limit: usize, head: Option<&Bytes>) -> Arc<Tee> {
        let tee = Arc::new(Tee {
            limit,
            kept: Mutex::default(),
        });
        if let Some(h) = head {
            tee.keep(h);
        }
        tee
    }

    fn keep(&self, data: &Bytes) {
        let mut k = self.kept.lock().unwrap();
        if k.over {
            return;
        }
        k.len += data.len();
        if k.len > self.limit {
            *k = Kept {
                over: true,
                ..Kept::default()
            };
            return;
        }
        // A clone of the chunk, not a copy of its bytes.
        k.chunks.push(data.clone());
    }

    fn end(&self) {
        self.kept.lock().unwrap().complete = true;
    }

    /// The whole body, if it ended within the limit.
    pub fn replay(&self) -> Option<Bytes> {
        let k = self.kept.lock().unwrap();
        if !k.complete || k.over {
            return None;
        }
        Some(match k.chunks.as_slice() {
            [] => Bytes::new(),
            [one] => one.clone(),
            many => {
                let mut b = BytesMut::with_capacity(k.len);
                for c in many {
                    b.extend_from_slice(c);
                }
                b.freeze()
            }
        })
    }
}

impl UpBody {
    fn new(head: Option<Bytes>, rest: ClientBody) -> Self {
        UpBody {
            head: head.filter(|h| !h.is_empty()),
            rest,
            count: None,
            tee: None,
        }
    }

    /// Adds the streamed bytes to `counter` (an endpoint's bytes_in).
    pub fn counting(mut self, counter: Arc<AtomicU64>) -> Self {
        self.count = Some(counter);
        self
    }

    /// The copy of what it sent, if it keeps one.
    pub fn tee(&self) -> Option<Arc<Tee>> {
        self.tee.clone()
    }
}

/// A request body made ready for the tries.
pub enum Prepared {
    /// Fits the replay buffer.
    Replayable(Bytes),
    /// Too large (or unknown and growing past the buffer), or not waited for:
    /// one try, unless a try gives it back unsent or its [`Tee`] has it whole.
    Once(UpBody),
}

impl Prepared {
    pub fn replayable(&self) -> bool {
        matches!(self, Prepared::Replayable(_))
    }
}

/// Reads up to `limit` bytes of the body to decide whether it can be replayed. Without
/// `wait`, only what has already arrived is read, and a body still arriving streams
/// with a [`Tee`].
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
            return Ok(Prepared::Once(UpBody::new(None, body)));
        }
    }
    // What arrived so far: a first chunk is kept as it came, and copied only if another
    // follows (the usual small body, a gRPC call's message, is one: no copy, and the tries'
    // clones of it share it).
    let mut first: Option<Bytes> = None;
    let mut buf = BytesMut::new();
    let whole = body.size_hint().exact();
    loop {
        let frame = match wait {
            true => body.frame().await,
            false => match body.frame().now_or_never() {
                Some(f) => f,
                // The rest is still on its way: stream it, keeping a copy.
                None => {
                    let head = arrived(&mut first, &mut buf);
                    let mut up = UpBody::new(Some(head), body);
                    up.tee = Some(Tee::new(limit, up.head.as_ref()));
                    return Ok(Prepared::Once(up));
                }
            },
        };
        let Some(frame) = frame else { break };
        // Trailers are dropped: they are rare on requests, and hop-by-hop
        // framing is ours to choose.
        if let Ok(data) = frame?.into_data() {
            if data.is_empty() {
                continue;
            }
            match first.take() {
                None if buf.is_empty() => {
                    if whole == Some(data.len() as u64) {
                        return Ok(Prepared::Replayable(data));
                    }
                    first = Some(data);
                }
                earlier => {
                    if let Some(e) = earlier {
                        buf.extend_from_slice(&e);
                    }
                    buf.extend_from_slice(&data);
                }
            }
            if first.as_ref().map_or(buf.len(), Bytes::len) > limit {
                let head = arrived(&mut first, &mut buf);
                return Ok(Prepared::Once(UpBody::new(Some(head), body)));
            }
        }
    }
    Ok(Prepared::Replayable(arrived(&mut first, &mut buf)))
}

/// The body's bytes read so far, in one piece.
fn arrived(first: &mut Option<Bytes>, buf: &mut BytesMut) -> Bytes {
    first.take().unwrap_or_else(|| buf.split().freeze())
}

impl Body for UpBody {
    type Data = Bytes;
    type Error = ClientBodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, ClientBodyError>>> {
        let this = self.get_mut();
        // The head was kept by the tee when it was made.
        let frame = match this.head.take() {
            Some(h) => Poll::Ready(Some(Ok(Frame::data(h)))),
            None => {
                let f = Pin::new(&mut this.rest).poll_frame(cx);
                if let (Some(tee), Poll::Ready(Some(Ok(f)))) = (&this.tee, &f) {
                    if let Some(d) = f.data_ref() {
                        tee.keep(d);
                    }
                }
                f
            }
        };
        if let Poll::Ready(Some(Ok(f))) = &frame {
            if let (Some(c), Some(d)) = (&this.count, f.data_ref()) {
                c.fetch_add(d.len() as u64, Relaxed);
            }
        }
        if let Some(tee) = &this.tee {
            // Seen ended here or after its last frame (a sender that stops polling once
            // the body says it is done never sees the `None`).
            if matches!(frame, Poll::Ready(None)) || this.is_end_stream() {
                tee.end();
            }
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.head.is_none() && self.rest.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let h = self.head.as_ref().map_or(0, |d| d.len() as u64);
        let r = self.rest.size_hint();
        let mut s = SizeHint::new();
        s.set_lower(r.lower() + h);
        if let Some(u) = r.upper() {
            s.set_upper(u + h);
        }
        s
    }
}
