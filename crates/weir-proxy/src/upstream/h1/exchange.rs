//! One request/response exchange on a connection the caller owns.
//!
//! The request is written while the response is read, as a full-duplex
//! backend may answer before it read the whole body (an echo streams it
//! back; an early 413 refuses it). Once the response head is parsed, the
//! response body keeps sending what is left of the request while it reads.
//! The connection is reusable only if both directions finished cleanly.

use std::future::poll_fn;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::request::Parts;
use http::Response;
use http_body::{Body, Frame, SizeHint};

use super::conn::Connection;
use super::decode::Decoder;
use super::encode::{self, BodyKind};
use super::error::{BoxError, Error};
use super::parse::{self, Head};
use super::write::{WriteError, Writer};

/// The request body to send.
pub enum Payload<B> {
    /// Held in memory (possibly empty): sent with the head when small.
    Bytes(Bytes),
    /// Streamed as it arrives.
    Stream(B),
}

/// A failed exchange. When not a byte of the request went out (the
/// connection was dead before it was used), `unsent` gives the payload back
/// so the request can go out on another connection.
pub struct SendError<B> {
    pub error: Error,
    pub unsent: Option<Payload<B>>,
}

/// Sends the request on `conn` and reads the response head. The response
/// body owns the connection; see [`RecvBody::take_reusable`].
pub async fn send<B>(
    mut conn: Connection,
    parts: &Parts,
    payload: Payload<B>,
) -> Result<Response<RecvBody<B>>, SendError<B>>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    let kind = match &payload {
        Payload::Bytes(b) if b.is_empty() => BodyKind::Empty,
        Payload::Bytes(b) => BodyKind::Known(b.len() as u64),
        Payload::Stream(b) if b.is_end_stream() => BodyKind::Empty,
        Payload::Stream(b) => match b.size_hint().exact() {
            Some(n) => BodyKind::Known(n),
            None => BodyKind::Unknown,
        },
    };
    conn.wbuf.clear();
    let framing = encode::head(&mut conn.wbuf, parts, kind);
    let inline = match &payload {
        Payload::Bytes(b) if !b.is_empty() && b.len() <= Writer::<B>::inline_limit() => {
            conn.wbuf.extend_from_slice(b);
            true
        }
        _ => false,
    };
    let mut ex = Exchange {
        conn,
        writer: Writer::new(payload, inline, framing),
        write_failed: None,
    };
    match poll_fn(|cx| ex.poll_head(cx, &parts.method)).await {
        Ok(head) => {
            let Head {
                parts,
                decoder,
                keep_alive,
            } = head;
            let mut body = RecvBody {
                ex: Some(ex),
                decoder,
                keep_alive,
                reusable: false,
            };
            if body.decoder.is_done() {
                body.finish();
            }
            Ok(Response::from_parts(parts, body))
        }
        Err(error) => Err(SendError {
            error,
            unsent: ex.writer.take_unsent(),
        }),
    }
}

struct Exchange<B> {
    conn: Connection,
    writer: Writer<B>,
    /// The socket refused the rest of the request; the response may still
    /// come (an early answer), but the connection is done for.
    write_failed: Option<std::io::Error>,
}

impl<B> Exchange<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    /// Moves the request along as far as the socket and the body allow.
    /// Errs only when the exchange must stop (the request body failed, or
    /// the connection died before a byte went out).
    fn drive_write(&mut self, cx: &mut Context<'_>) -> Result<(), Error> {
        if self.write_failed.is_some() || self.writer.is_done() {
            return Ok(());
        }
        match self.writer.poll(&mut self.conn, cx) {
            Poll::Ready(Ok(())) | Poll::Pending => Ok(()),
            Poll::Ready(Err(WriteError::Io(e))) if self.writer.sent_nothing() => Err(Error::Io(e)),
            Poll::Ready(Err(WriteError::Io(e))) => {
                self.writer.abandon();
                self.write_failed = Some(e);
                Ok(())
            }
            Poll::Ready(Err(WriteError::Body(e))) => Err(e),
        }
    }

    fn poll_head(
        &mut self,
        cx: &mut Context<'_>,
        method: &http::Method,
    ) -> Poll<Result<Head, Error>> {
        loop {
            self.drive_write(cx)?;
            if !self.conn.rbuf.is_empty() {
                if let Some(head) = parse::parse(&mut self.conn.rbuf, method)? {
                    return Poll::Ready(Ok(head));
                }
            }
            match self.conn.poll_fill(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(match self.write_failed.take() {
                        Some(e) => Error::Io(e),
                        None => Error::ClosedBeforeHead,
                    }))
                }
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(Error::Io(e))),
            }
        }
    }
}

/// A response body read straight from the upstream connection.
pub struct RecvBody<B> {
    /// Gone once the body ended (or failed) and the connection was not
    /// reusable.
    ex: Option<Exchange<B>>,
    decoder: Decoder,
    keep_alive: bool,
    reusable: bool,
}

impl<B> RecvBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    /// The connection, if the exchange ended cleanly and the backend keeps
    /// it open: ready for the next request.
    pub fn take_reusable(&mut self) -> Option<Connection> {
        if !self.reusable {
            return None;
        }
        self.reusable = false;
        self.ex.take().map(|ex| ex.conn)
    }

    /// The response is complete: decide whether the connection can be
    /// reused, and close it now if not.
    fn finish(&mut self) {
        self.reusable = self.keep_alive
            && self.ex.as_ref().is_some_and(|ex| {
                ex.writer.is_done() && ex.write_failed.is_none() && ex.conn.rbuf.is_empty()
            });
        if !self.reusable {
            self.ex = None;
        }
    }

    fn fail(&mut self, e: Error) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        self.ex = None;
        self.decoder = Decoder::Done;
        Poll::Ready(Some(Err(e)))
    }
}

impl<B> Body for RecvBody<B>
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
        loop {
            if this.decoder.is_done() {
                return Poll::Ready(None);
            }
            let Some(ex) = this.ex.as_mut() else {
                return Poll::Ready(None);
            };
            if let Err(e) = ex.drive_write(cx) {
                return this.fail(e);
            }
            match this.decoder.decode(&mut ex.conn.rbuf) {
                Ok(Some(data)) => {
                    if this.decoder.is_done() {
                        this.finish();
                    }
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Ok(None) if this.decoder.is_done() => {
                    this.finish();
                    return Poll::Ready(None);
                }
                Ok(None) => {}
                Err(e) => return this.fail(e),
            }
            match ex.conn.poll_fill(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(0)) => {
                    if let Err(e) = this.decoder.on_eof() {
                        return this.fail(e);
                    }
                    // A close-delimited body: the connection ended with it.
                    this.ex = None;
                    return Poll::Ready(None);
                }
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => return this.fail(Error::Io(e)),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.decoder.is_done()
    }

    fn size_hint(&self) -> SizeHint {
        match self.decoder.remaining() {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}
