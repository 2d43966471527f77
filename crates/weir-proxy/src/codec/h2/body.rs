//! An upstream HTTP/2 stream's received body (a response's, on the `h2` crate): DATA
//! frames as they come (each returned to the stream's flow-control
//! window once taken, so the peer may send more), then trailers.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use h2::RecvStream;
use http_body::{Body, Frame, SizeHint};

pub struct StreamBody {
    recv: RecvStream,
    /// DATA is over; trailers (if any) are next.
    data_done: bool,
    /// From `content-length`, when the client sent one.
    length: Option<u64>,
}

impl StreamBody {
    pub fn new(recv: RecvStream, length: Option<u64>) -> StreamBody {
        StreamBody {
            recv,
            data_done: false,
            length,
        }
    }
}

impl Body for StreamBody {
    type Data = Bytes;
    type Error = h2::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, h2::Error>>> {
        let this = self.get_mut();
        if !this.data_done {
            match std::task::ready!(this.recv.poll_data(cx)) {
                Some(Ok(data)) => {
                    // Taken off the window now: the pipeline sends it upstream next, and
                    // its own buffers bound what it holds.
                    let _ = this.recv.flow_control().release_capacity(data.len());
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => this.data_done = true,
            }
        }
        match std::task::ready!(this.recv.poll_trailers(cx)) {
            Ok(Some(t)) => Poll::Ready(Some(Ok(Frame::trailers(t)))),
            Ok(None) => Poll::Ready(None),
            Err(e) => Poll::Ready(Some(Err(e))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.recv.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        match self.length {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}
