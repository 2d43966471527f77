//! An upstream HTTP/2 stream's response body: DATA and trailers as the connection's task
//! handed them to the stream's slot, taken a batch at a time (one lock for all that came)
//! and given back to the flow-control windows as taken, so the endpoint may send more. It
//! holds the stream's claim on its connection, and sends the rest of a streamed request as
//! it is polled.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use super::client::{wait, Part};
use super::opened::Opened;
use super::pump::Pump;
use super::stream_error::{BoxError, Error};

pub struct H2ResponseBody<B> {
    opened: Opened,
    pump: Option<Pump<B>>,
    /// Taken from the slot, not yet polled out.
    taken: VecDeque<Part>,
    /// The stream's END_STREAM is among what was taken.
    end: bool,
    /// From `content-length`.
    length: Option<u64>,
}

impl<B> H2ResponseBody<B> {
    pub(super) fn new(
        opened: Opened,
        pump: Option<Pump<B>>,
        end: bool,
        length: Option<u64>,
    ) -> H2ResponseBody<B> {
        H2ResponseBody {
            opened,
            pump,
            taken: VecDeque::new(),
            end,
            length,
        }
    }
}

impl<B> Body for H2ResponseBody<B>
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
            match p.poll(cx, &this.opened) {
                Poll::Ready(Ok(())) => this.pump = None,
                Poll::Ready(Err(e)) => {
                    this.pump = None;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Pending => {}
            }
        }
        loop {
            match this.taken.pop_front() {
                Some(Part::Data(d)) => return Poll::Ready(Some(Ok(Frame::data(d)))),
                Some(Part::Trailers(t)) => return Poll::Ready(Some(Ok(Frame::trailers(t)))),
                None => {}
            }
            if this.end {
                // The answer is complete; a request body still streaming is cut (the
                // stream is reset when the exchange is dropped), as the endpoint wants
                // no more.
                this.pump = None;
                return Poll::Ready(None);
            }
            // Through the field (not `conn()`), so that `opened.done` can be set below.
            let mut st = this.opened.stream.conn.conn.lock();
            let id = this.opened.id;
            let Some(slot) = st.slots.get_mut(&id) else {
                return Poll::Ready(Some(Err(Error::Connection("the stream is gone".into()))));
            };
            if slot.parts.is_empty() {
                if let Some(f) = &slot.failed {
                    return Poll::Ready(Some(Err(f.into())));
                }
                if !slot.end {
                    wait(slot, cx);
                    return Poll::Pending;
                }
            }
            std::mem::swap(&mut this.taken, &mut slot.parts);
            this.end = slot.end;
            let n: usize = this
                .taken
                .iter()
                .map(|p| match p {
                    Part::Data(d) => d.len(),
                    Part::Trailers(_) => 0,
                })
                .sum();
            // Taken off the windows now: the pipeline sends it on next, and its own
            // buffers bound what it holds.
            if n > 0 {
                st.h2.release(id, n);
            }
            if this.end {
                // The answer is whole: what dropping `opened` would do (and the cut of a
                // request body still streaming) is done now, under this lock, so that the
                // drop takes none.
                st.forget(id);
                this.opened.done = true;
                this.pump = None;
            }
            if let Some(w) = st.output_waker() {
                w.wake();
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.end && self.taken.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        match self.length {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}
