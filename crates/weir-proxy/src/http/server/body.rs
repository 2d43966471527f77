//! A request body, read straight from the client socket by whoever polls
//! it (the request's task): no channel, no extra wake-up. The body owns the
//! connection's reader until the body is done or dropped, then puts it back
//! in the connection's `Home`.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use super::error::BodyError;
use super::reader::{Home, Reader};

pub struct ReqBody {
    /// With the reader only while there is body left to read.
    reader: Option<(Reader, Arc<Home>)>,
    /// Ask for `100 Continue` at the first read, if nothing came yet.
    expect_continue: bool,
}

impl ReqBody {
    pub(crate) fn empty() -> Self {
        ReqBody {
            reader: None,
            expect_continue: false,
        }
    }

    pub(crate) fn new(reader: Reader, home: Arc<Home>, expect_continue: bool) -> Self {
        ReqBody {
            reader: Some((reader, home)),
            expect_continue,
        }
    }

    fn go_home(&mut self) {
        if let Some((r, home)) = self.reader.take() {
            home.put(r);
        }
    }

    fn fail(&mut self, e: BodyError) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        if let Some((r, _)) = self.reader.as_mut() {
            r.broken = true;
        }
        self.go_home();
        Poll::Ready(Some(Err(e)))
    }
}

impl Drop for ReqBody {
    fn drop(&mut self) {
        self.go_home();
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
        loop {
            let Some((r, home)) = this.reader.as_mut() else {
                return Poll::Ready(None);
            };
            if std::mem::take(&mut this.expect_continue) && r.buf.is_empty() {
                home.ask_continue();
            }
            match r.body.decode(&mut r.buf) {
                Ok(Some(data)) => {
                    if r.body.is_done() {
                        this.go_home();
                    }
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Ok(None) if r.body.is_done() => {
                    this.go_home();
                    return Poll::Ready(None);
                }
                Ok(None) => {}
                Err(e) => return this.fail(e.into()),
            }
            match r.poll_fill(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(0)) => {
                    let e = r
                        .body
                        .on_eof()
                        .err()
                        .unwrap_or(super::DecodeError::ClosedEarly);
                    return this.fail(e.into());
                }
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => return this.fail(e.into()),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.reader.as_ref().is_none_or(|(r, _)| r.body.is_done())
    }

    fn size_hint(&self) -> SizeHint {
        match self.reader.as_ref().map(|(r, _)| r.body.remaining()) {
            None => SizeHint::with_exact(0),
            Some(Some(n)) => SizeHint::with_exact(n),
            Some(None) => SizeHint::default(),
        }
    }
}
