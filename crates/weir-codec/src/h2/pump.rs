//! The rest of a streamed request body, going out on its upstream HTTP/2 stream as the
//! stream's window allows (polled by the exchange while it waits for the head, then by the
//! response body).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http_body::Body;
use weir_h2::Reason;

use super::client::wait;
use super::opened::Opened;
use super::stream_error::{BoxError, Error};

pub struct Pump<B> {
    body: B,
    /// Taken from the body, not yet all sent.
    held: Option<(Bytes, bool)>,
}

impl<B> Pump<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    pub fn new(body: B) -> Pump<B> {
        Pump { body, held: None }
    }

    /// Sends what the body has and the window takes; ready when the body has ended
    /// (END_STREAM sent) or the stream is no longer sending (reset, or the answer ended
    /// it). A body that breaks off resets the stream: the endpoint must not take what it
    /// got for the whole request.
    pub(super) fn poll(
        &mut self,
        cx: &mut Context<'_>,
        opened: &Opened,
    ) -> Poll<Result<(), Error>> {
        loop {
            if let Some((data, end)) = &mut self.held {
                let (all, waker) = {
                    let mut st = opened.conn().lock();
                    if !st.h2.is_sending(opened.id) {
                        return Poll::Ready(Ok(()));
                    }
                    let n = st.h2.send_data(opened.id, data, *end);
                    data.advance(n);
                    let all = data.is_empty();
                    if !all {
                        if let Some(slot) = st.slots.get_mut(&opened.id) {
                            slot.wants_window = true;
                            wait(slot, cx);
                        }
                    }
                    (all, st.output_waker())
                };
                if let Some(w) = waker {
                    w.wake();
                }
                if !all {
                    return Poll::Pending;
                }
                let end = *end;
                self.held = None;
                if end {
                    return Poll::Ready(Ok(()));
                }
            }
            let frame = match std::task::ready!(Pin::new(&mut self.body).poll_frame(cx)) {
                None => {
                    self.with(opened, |h2, id| {
                        h2.send_data(id, &[], true);
                    });
                    return Poll::Ready(Ok(()));
                }
                Some(Err(e)) => {
                    self.with(opened, |h2, id| h2.reset(id, Reason::CANCEL));
                    return Poll::Ready(Err(Error::Body(e.into())));
                }
                Some(Ok(f)) => f,
            };
            match frame.into_data() {
                Ok(data) => {
                    let end = self.body.is_end_stream();
                    if !data.is_empty() || end {
                        self.held = Some((data, end));
                    }
                }
                Err(frame) => {
                    if let Ok(t) = frame.into_trailers() {
                        self.with(opened, |h2, id| {
                            h2.send_trailers(id, &t);
                        });
                        return Poll::Ready(Ok(()));
                    }
                }
            }
        }
    }

    /// Does `f` on the connection and wakes its task for what `f` queued.
    fn with(&self, opened: &Opened, f: impl FnOnce(&mut weir_h2::client::H2ClientConnection, u32)) {
        let waker = {
            let mut st = opened.conn().lock();
            f(&mut st.h2, opened.id);
            st.output_waker()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}
