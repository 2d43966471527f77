//! A request body, read straight from the client socket by whoever polls
//! it (the request's task): no channel, no extra wake-up. The reader waits
//! in the connection's `Home` meanwhile; the body is only a pointer there,
//! and gives the reader back when it is done or dropped.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use super::error::BodyError;
use super::reader::Home;
use weir_h1::decode::DecodeError;

pub struct ReqBody {
    /// Only while there is body left to read.
    home: Option<Arc<Home>>,
    /// Bytes still to come, when known (for `size_hint` without a lock).
    remaining: Option<u64>,
    /// Ask for `100 Continue` at the first read, if nothing came yet.
    expect_continue: bool,
}

impl ReqBody {
    pub(crate) fn empty() -> Self {
        ReqBody {
            home: None,
            remaining: Some(0),
            expect_continue: false,
        }
    }

    /// A body read from the reader lent to `home`.
    pub(crate) fn new(home: Arc<Home>, remaining: Option<u64>, expect_continue: bool) -> Self {
        ReqBody {
            home: Some(home),
            remaining,
            expect_continue,
        }
    }

    /// Done with the reader: the connection may take it back.
    fn give_back(&mut self) {
        if let Some(home) = self.home.take() {
            home.lock().lent = false;
        }
        self.remaining = Some(0);
    }
}

impl Drop for ReqBody {
    fn drop(&mut self) {
        self.give_back();
    }
}

impl Body for ReqBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        let Some(home) = this.home.as_ref() else {
            return Poll::Ready(None);
        };
        let mut slot = home.lock();
        let Some(r) = slot.reader.as_mut() else {
            drop(slot);
            this.give_back();
            return Poll::Ready(None);
        };
        let asked = std::mem::take(&mut this.expect_continue) && r.buf.is_empty();
        if asked {
            home.ask_continue();
        }
        let polled = loop {
            match r.body.decode(&mut r.buf) {
                Ok(Some(data)) => break Ok(Some(data)),
                Ok(None) if r.body.is_done() => break Ok(None),
                Ok(None) => {}
                Err(e) => break Err(BodyError::from(e)),
            }
            match r.poll_fill(cx) {
                // The client sends nothing before the `100 Continue` weir sends next (whose
                // bytes rearm the at-once ACK for the body's first wait).
                Poll::Pending if asked => return Poll::Pending,
                Poll::Pending => {
                    r.awaiting_rest();
                    return Poll::Pending;
                }
                Poll::Ready(Ok(0)) => {
                    let e = r.body.on_eof().err().unwrap_or(DecodeError::ClosedEarly);
                    break Err(e.into());
                }
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => break Err(e.into()),
            }
        };
        let done = r.body.is_done();
        if polled.is_err() {
            r.broken = true;
        }
        this.remaining = r.body.remaining();
        drop(slot);
        if done || polled.is_err() {
            this.give_back();
        }
        match polled {
            Ok(Some(data)) => Poll::Ready(Some(Ok(Frame::data(data)))),
            Ok(None) => Poll::Ready(None),
            Err(e) => Poll::Ready(Some(Err(e))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == Some(0)
    }

    fn size_hint(&self) -> SizeHint {
        match self.remaining {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}
