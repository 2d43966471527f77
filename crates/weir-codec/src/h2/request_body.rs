//! A client stream's request body, as the pipeline reads it: DATA as the connection's loop
//! received it, then trailers. What the pipeline takes goes back to the client's window in
//! the loop's next pass, so a client never has more in flight than the window allows. A
//! client that expects `100-continue` is sent its `100` when the body is first read
//! (`StreamShared::poll_next`).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use super::shared::{Part, StreamGone, StreamShared};

pub struct RequestBody {
    shared: Arc<StreamShared>,
    /// From `content-length`, when the client sent one (the connection checked the DATA
    /// adds up to it).
    length: Option<u64>,
}

impl RequestBody {
    pub fn new(shared: Arc<StreamShared>, length: Option<u64>) -> RequestBody {
        RequestBody { shared, length }
    }
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = StreamGone;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, StreamGone>>> {
        self.shared.poll_next(cx).map(|p| {
            p.map(|r| {
                r.map(|part| match part {
                    Part::Data(d) => Frame::data(d),
                    Part::Trailers(t) => Frame::trailers(t),
                })
            })
        })
    }

    fn is_end_stream(&self) -> bool {
        self.shared.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        match self.length {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}
