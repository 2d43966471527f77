//! A client stream's request body, as the pipeline reads it: DATA as the connection's loop
//! received it, then trailers. What the pipeline takes goes back to the client's window in
//! the loop's next pass, so a client never has more in flight than the window allows. A
//! client that expects `100-continue` is sent its `100` when the body is first read.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use super::shared::{Part, Shared, StreamGone};

pub struct RequestBody {
    shared: Arc<Shared>,
    /// From `content-length`, when the client sent one (the connection checked the DATA
    /// adds up to it).
    length: Option<u64>,
    /// The client waits for a `100` before sending the body (asked for on the first read).
    expect_continue: bool,
}

impl RequestBody {
    pub fn new(shared: Arc<Shared>, length: Option<u64>, expect_continue: bool) -> RequestBody {
        RequestBody {
            shared,
            length,
            expect_continue,
        }
    }
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = StreamGone;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, StreamGone>>> {
        if std::mem::take(&mut self.expect_continue) {
            self.shared.ask_continue();
        }
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
