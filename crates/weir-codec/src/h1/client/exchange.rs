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
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::request::Parts;
use http::Response;
use http_body::{Body, Frame, SizeHint};

use super::conn::H1ClientConnection;
use super::encode::{self, BodyKind};
use super::error::{BoxError, Error};
use super::write::{WriteError, Writer};
use crate::added::Added;
use crate::send::{HeadTimer, Payload};
use weir_h1::decode::Decoder;
use weir_h1::response::{self as parse, Head};

/// A failed exchange. When not a byte of the request went out (the
/// connection was dead before it was used), `unsent` gives the payload back
/// so the request can go out on another connection.
pub struct SendError<B> {
    pub error: Error,
    pub unsent: Option<Payload<B>>,
    /// Whether any byte of a response had arrived when the exchange failed.
    pub answered: bool,
    /// For a request that went out and got no answer: how long the backend
    /// had been silent when it went (`H1ClientConnection::silent_when_sent`).
    pub silent_for: Option<Duration>,
}

impl<B> SendError<B> {
    /// Whether the backend's application can have read the whole request:
    /// what decides if a request that is not idempotent may be sent again.
    ///
    /// It cannot when not a byte went out, or when the backend reset the
    /// connection before any response byte: a kernel answers with a reset
    /// when its socket is closed with bytes still unread (or gets bytes after
    /// it was closed, the stale keep-alive race), so the application never
    /// had all of the request; in the race the reset trails the backend's
    /// close, which is why a close is followed by a look for it
    /// (`H1ClientConnection::reset_follows`). A clean close (EOF) alone after the
    /// request went out proves nothing: the application may have read it,
    /// acted on it, and died before answering. Nor does a timeout, nor any
    /// response byte.
    pub fn may_have_been_processed(&self) -> bool {
        self.unsent.is_none() && (self.answered || !self.error.is_reset())
    }
}

/// Sends the request on `conn` and reads the response head, failing with
/// [`Error::Timeout`] if the head is not complete in time (see
/// [`HeadTimer`]). The response body owns the connection; see
/// [`H1ResponseBody::take_reusable`].
pub async fn send<B>(
    conn: H1ClientConnection,
    parts: &Parts,
    payload: Payload<B>,
    timer: impl Into<HeadTimer>,
) -> Result<Response<H1ResponseBody<B>>, SendError<B>>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    send_into(conn, parts, &Added::NONE, payload, timer.into()).await
}

/// As [`send`], with the body made into the caller's type `T` where the
/// response is built (a session seam's body enum costs no extra move), and
/// `added` written after `parts`' fields.
pub async fn send_into<B, T>(
    mut conn: H1ClientConnection,
    parts: &Parts,
    added: &Added<'_>,
    payload: Payload<B>,
    timer: HeadTimer,
) -> Result<Response<T>, SendError<B>>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
    T: From<H1ResponseBody<B>>,
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
    conn.acked = false;
    let framing = encode::head(&mut conn.wbuf, parts, added, kind);
    let inline = match &payload {
        Payload::Bytes(b) if !b.is_empty() && b.len() <= Writer::<B>::inline_limit() => {
            conn.wbuf.extend_from_slice(b);
            true
        }
        _ => false,
    };
    let mut sending = Sending {
        writer: Writer::new(payload, inline, framing),
        failed: None,
    };
    let mut answered = false;
    let mut deadline = timer.after(timer.started);
    // Writes seen by the last poll; None before the first.
    let mut writes = None;
    let head = poll_fn(|cx| {
        match poll_head(&mut conn, &mut sending, &mut answered, cx, parts) {
            Poll::Pending => {
                let now_writes = sending.writer.writes();
                if writes.is_some_and(|w| w != now_writes) {
                    // More of the request went out since the last poll.
                    deadline = deadline.max(timer.after(Instant::now()));
                }
                writes = Some(now_writes);
                conn.poll_deadline(deadline, cx)
                    .map(|()| Err(Error::Timeout))
            }
            done => done,
        }
    });
    match head.await {
        Ok(head) => {
            let Head {
                mut parts,
                decoder,
                keep_alive,
                upgraded,
                reason,
            } = head;
            if let Some(r) = reason.and_then(|r| hyper::ext::ReasonPhrase::try_from(r).ok()) {
                // Sent on to an HTTP/1 client (`server/respond.rs`), as hyper's server did.
                parts.extensions.insert(r);
            }
            // Usually the whole request is out by now; the rare rest (an
            // early answer, a full-duplex backend) is boxed, to keep the
            // body small where it is moved.
            let (sent, sending) = match (&sending.failed, sending.writer.is_done()) {
                (None, true) => (true, None),
                (None, false) => (false, Some(Box::new(sending))),
                (Some(_), _) => (false, None),
            };
            let mut body = H1ResponseBody {
                conn: Some(conn),
                sending,
                sent,
                decoder,
                keep_alive,
                reusable: false,
                // Only once the request is all out: a switch is bytes of the new
                // protocol from here on, with no request body left to send.
                upgraded: upgraded && sent,
            };
            if body.decoder.is_done() {
                body.finish();
            }
            Ok(Response::from_parts(parts, T::from(body)))
        }
        Err(mut error) => {
            let unsent = sending.writer.take_unsent();
            let went_unanswered = unsent.is_none() && !answered;
            if matches!(error, Error::ClosedBeforeHead) && went_unanswered {
                // A close right after our write: was it the idle-close race?
                if conn.reset_follows().await {
                    error = Error::Io(std::io::ErrorKind::ConnectionReset.into());
                }
            }
            Err(SendError {
                error,
                unsent,
                answered,
                silent_for: went_unanswered.then(|| conn.silent_when_sent()).flatten(),
            })
        }
    }
}

/// The request side of an exchange.
struct Sending<B> {
    writer: Writer<B>,
    /// The socket refused the rest of the request; the response may still
    /// come (an early answer), but the connection is done for.
    failed: Option<std::io::Error>,
}

impl<B> Sending<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    /// Moves the request along as far as the socket and the body allow.
    /// Errs only when the exchange must stop (the request body failed, or
    /// the connection died before a byte went out).
    fn drive(&mut self, conn: &mut H1ClientConnection, cx: &mut Context<'_>) -> Result<(), Error> {
        if self.failed.is_some() || self.writer.is_done() {
            return Ok(());
        }
        let writes = self.writer.writes();
        let polled = self.writer.poll(conn, cx);
        if self.writer.writes() != writes {
            // Bytes weir sends have the kernel hold its ACKs back again: an answer already
            // coming is acknowledged at once anew at its next wait.
            conn.acked = false;
        }
        match polled {
            Poll::Ready(Ok(())) | Poll::Pending => Ok(()),
            Poll::Ready(Err(WriteError::Io(e))) if self.writer.sent_nothing() => Err(Error::Io(e)),
            Poll::Ready(Err(WriteError::Io(e))) => {
                self.writer.abandon();
                self.failed = Some(e);
                Ok(())
            }
            Poll::Ready(Err(WriteError::Body(e))) => Err(e),
        }
    }
}

fn poll_head<B>(
    conn: &mut H1ClientConnection,
    sending: &mut Sending<B>,
    answered: &mut bool,
    cx: &mut Context<'_>,
    parts: &Parts,
) -> Poll<Result<Head, Error>>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    loop {
        sending.drive(conn, cx)?;
        if !conn.rbuf.is_empty() {
            let upgrade = parts.headers.get(http::header::UPGRADE);
            if let Some(head) = parse::parse_for(&mut conn.rbuf, &parts.method, upgrade)? {
                return Poll::Ready(Ok(head));
            }
        }
        match conn.poll_fill(cx) {
            Poll::Pending => {
                if *answered {
                    // Part of the head is here, the rest is not.
                    conn.awaiting_rest();
                }
                return Poll::Pending;
            }
            Poll::Ready(Ok(0)) => {
                return Poll::Ready(Err(match sending.failed.take() {
                    Some(e) => Error::Io(e),
                    None => Error::ClosedBeforeHead,
                }))
            }
            Poll::Ready(Ok(_)) => *answered = true,
            Poll::Ready(Err(e)) => return Poll::Ready(Err(Error::Io(e))),
        }
    }
}

/// A response body read straight from the upstream connection.
pub struct H1ResponseBody<B> {
    /// Gone once the body ended (or failed) and the connection was not
    /// reusable.
    conn: Option<H1ClientConnection>,
    /// What is left of the request, if it was not all sent with the head.
    sending: Option<Box<Sending<B>>>,
    /// The whole request went out cleanly.
    sent: bool,
    decoder: Decoder,
    keep_alive: bool,
    reusable: bool,
    /// The backend switched protocols (`101`): the connection is kept for
    /// whoever relays it (`take_upgraded`), never reused for HTTP.
    upgraded: bool,
}

impl<B> H1ResponseBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    /// The connection, if the exchange ended cleanly and the backend keeps
    /// it open: ready for the next request.
    pub fn take_reusable(&mut self) -> Option<H1ClientConnection> {
        if !self.reusable {
            return None;
        }
        self.reusable = false;
        self.conn.take()
    }

    /// Whether the backend switched to the protocol the request asked for.
    pub fn is_upgraded(&self) -> bool {
        self.upgraded && self.conn.is_some()
    }

    /// The connection after a `101`, with the new protocol's bytes that came
    /// after the head.
    pub fn take_upgraded(&mut self) -> Option<H1ClientConnection> {
        if !self.upgraded {
            return None;
        }
        self.upgraded = false;
        self.conn.take()
    }

    /// Sends more of the request, if some is left.
    fn drive_write(&mut self, cx: &mut Context<'_>) -> Result<(), Error> {
        let (Some(s), Some(conn)) = (self.sending.as_mut(), self.conn.as_mut()) else {
            return Ok(());
        };
        s.drive(conn, cx)?;
        if s.failed.is_some() || s.writer.is_done() {
            self.sent = s.failed.is_none();
            self.sending = None;
        }
        Ok(())
    }

    /// The response is complete: decide whether the connection can be
    /// reused, and close it now if not. A request still being sent is
    /// abandoned.
    fn finish(&mut self) {
        self.reusable = self.keep_alive
            && self.sent
            && self.sending.is_none()
            && self.conn.as_ref().is_some_and(|c| c.rbuf.is_empty());
        if !self.reusable && !self.upgraded {
            tracing::debug!(
                keep_alive = self.keep_alive,
                request_sent = self.sent && self.sending.is_none(),
                bytes_after = self.conn.as_ref().map_or(0, |c| c.rbuf.len()),
                "upstream connection not reused after its answer"
            );
            self.conn = None;
            self.sending = None;
        }
    }

    fn fail(&mut self, e: Error) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        self.conn = None;
        self.sending = None;
        self.decoder = Decoder::Done;
        Poll::Ready(Some(Err(e)))
    }
}

impl<B> Body for H1ResponseBody<B>
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
            if this.decoder.is_done() || this.conn.is_none() {
                return Poll::Ready(None);
            }
            if let Err(e) = this.drive_write(cx) {
                return this.fail(e);
            }
            let Some(conn) = this.conn.as_mut() else {
                return Poll::Ready(None);
            };
            match this.decoder.decode(&mut conn.rbuf) {
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
                Err(e) => return this.fail(e.into()),
            }
            match conn.poll_fill(cx) {
                Poll::Pending => {
                    conn.awaiting_rest();
                    return Poll::Pending;
                }
                Poll::Ready(Ok(0)) => {
                    if let Err(e) = this.decoder.on_eof() {
                        return this.fail(e.into());
                    }
                    // A close-delimited body: the connection ended with it.
                    this.conn = None;
                    this.sending = None;
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

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use http::Request;
    use http_body_util::BodyExt;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::mpsc;

    use super::*;

    /// A request body fed through a channel.
    struct Chan(mpsc::Receiver<Bytes>, Option<u64>);

    impl Body for Chan {
        type Data = Bytes;
        type Error = Infallible;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            self.0.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b))))
        }
        fn size_hint(&self) -> SizeHint {
            self.1.map_or_else(SizeHint::default, SizeHint::with_exact)
        }
    }

    async fn pair() -> (H1ClientConnection, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (s, _) = l.accept().await.unwrap();
        (
            H1ClientConnection::new(weir_transport::UpstreamStream::Plain(c)),
            s,
        )
    }

    /// Reads from `s` until `buf` holds a request head; returns its length.
    async fn read_head(s: &mut TcpStream, buf: &mut Vec<u8>) -> usize {
        loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                return i + 4;
            }
            let mut b = [0u8; 4096];
            let n = s.read(&mut b).await.unwrap();
            assert!(n > 0, "EOF before the request head");
            buf.extend_from_slice(&b[..n]);
        }
    }

    fn get(path: &str) -> Parts {
        Request::get(path)
            .header("host", "b")
            .body(())
            .unwrap()
            .into_parts()
            .0
    }

    /// A deadline no test reaches.
    fn far() -> Instant {
        Instant::now() + std::time::Duration::from_secs(60)
    }

    fn none() -> Payload<Chan> {
        Payload::Bytes(Bytes::new())
    }

    #[tokio::test]
    async fn a_clean_exchange_leaves_the_connection_reusable() {
        let (conn, mut s) = pair().await;
        let backend = tokio::spawn(async move {
            for body in ["one", "two"] {
                let mut buf = Vec::new();
                let n = read_head(&mut s, &mut buf).await;
                assert_eq!(&buf[..n], b"GET /x HTTP/1.1\r\nhost: b\r\n\r\n");
                let resp = format!("HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\n{body}");
                s.write_all(resp.as_bytes()).await.unwrap();
            }
            s
        });
        let mut resp = send(conn, &get("/x"), none(), far()).await.ok().unwrap();
        let data = resp.body_mut().frame().await.unwrap().unwrap();
        assert_eq!(data.into_data().unwrap(), "one");
        assert!(resp.body().is_end_stream());
        let conn = resp.body_mut().take_reusable().expect("reusable");
        assert!(!conn.is_closed());
        let resp = send(conn, &get("/x"), none(), far()).await.ok().unwrap();
        let mut body = resp.into_body();
        assert_eq!(
            body.frame().await.unwrap().unwrap().into_data().unwrap(),
            "two"
        );
        let conn = body.take_reusable().unwrap();
        // The backend goes away: the pooled connection shows it.
        drop(backend.await.unwrap());
        for _ in 0..100 {
            if conn.is_closed() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        panic!("a closed connection looks open");
    }

    /// Answers each request head with a 2-byte body after `delays[i]`.
    fn slow_backend(mut s: TcpStream, delays: Vec<u64>) {
        tokio::spawn(async move {
            for d in delays {
                let mut buf = Vec::new();
                read_head(&mut s, &mut buf).await;
                tokio::time::sleep(Duration::from_millis(d)).await;
                let r = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                if s.write_all(r).await.is_err() {
                    return;
                }
            }
            let _ = s.read(&mut [0u8; 16]).await;
        });
    }

    async fn exchange_ok(
        conn: H1ClientConnection,
        deadline: Instant,
    ) -> Result<H1ClientConnection, Error> {
        let resp = send(conn, &get("/"), none(), deadline)
            .await
            .map_err(|e| e.error)?;
        let mut body = resp.into_body();
        assert_eq!(
            body.frame().await.unwrap().unwrap().into_data().unwrap(),
            "ok"
        );
        Ok(body.take_reusable().expect("reusable"))
    }

    #[tokio::test]
    async fn a_reused_connection_times_out_by_each_requests_own_deadline() {
        let (conn, s) = pair().await;
        slow_backend(s, vec![0, 150, 0]);
        let ms = Duration::from_millis;
        // The first exchange arms the timer for +100 ms.
        let conn = exchange_ok(conn, Instant::now() + ms(100)).await.unwrap();
        // The second answers at +150 ms, within its own +400 ms: the timer
        // firing at the first exchange's deadline must not end it.
        let t = Instant::now();
        let conn = exchange_ok(conn, t + ms(400)).await.unwrap();
        assert!(t.elapsed() >= ms(140), "{:?}", t.elapsed());
        // An earlier deadline than the armed one still holds.
        let (conn2, s2) = pair().await;
        slow_backend(s2, vec![0, 300]);
        let conn2 = exchange_ok(conn2, Instant::now() + ms(60_000))
            .await
            .unwrap();
        let t = Instant::now();
        let Err(Error::Timeout) = exchange_ok(conn2, t + ms(100)).await else {
            panic!("no timeout");
        };
        let took = t.elapsed();
        assert!(took >= ms(95) && took < ms(280), "{took:?}");
        // A deadline already past: at once.
        let (conn3, s3) = pair().await;
        slow_backend(s3, vec![200]);
        let t = Instant::now();
        let Err(Error::Timeout) = exchange_ok(conn3, t).await else {
            panic!("no timeout");
        };
        assert!(t.elapsed() < ms(150), "{:?}", t.elapsed());
        drop(conn);
    }

    #[tokio::test]
    async fn close_and_close_delimited_responses_are_not_reused() {
        for raw in [
            "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok",
            "HTTP/1.1 200 OK\r\n\r\nok",
            "HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nok",
            "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokEXTRA",
        ] {
            let (conn, mut s) = pair().await;
            tokio::spawn(async move {
                let mut buf = Vec::new();
                read_head(&mut s, &mut buf).await;
                s.write_all(raw.as_bytes()).await.unwrap();
                if raw.contains("\r\n\r\nok") && !raw.contains("length") {
                    let _ = s.shutdown().await;
                }
                let _ = s.read(&mut [0u8; 16]).await;
            });
            let resp = send(conn, &get("/"), none(), far()).await.ok().unwrap();
            let mut body = resp.into_body();
            let mut data = Vec::new();
            while let Some(f) = body.frame().await {
                data.extend_from_slice(&f.unwrap().into_data().unwrap());
            }
            assert_eq!(data, b"ok");
            assert!(body.take_reusable().is_none(), "{raw:?}");
        }
    }

    #[tokio::test]
    async fn an_early_answer_arrives_and_retires_the_connection() {
        let (conn, mut s) = pair().await;
        tokio::spawn(async move {
            let mut buf = Vec::new();
            read_head(&mut s, &mut buf).await;
            // Refuses the body without reading it.
            s.write_all(b"HTTP/1.1 413 Payload Too Large\r\ncontent-length: 4\r\n\r\nbig!")
                .await
                .unwrap();
            let _ = s.read(&mut [0u8; 16]).await;
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        });
        let (tx, rx) = mpsc::channel(4);
        tx.send(Bytes::from(vec![b'x'; 64 * 1024])).await.unwrap();
        let parts = Request::post("/up").body(()).unwrap().into_parts().0;
        let resp = send(
            conn,
            &parts,
            Payload::Stream(Chan(rx, Some(10 << 20))),
            far(),
        )
        .await
        .ok()
        .unwrap();
        assert_eq!(resp.status(), 413);
        let mut body = resp.into_body();
        assert_eq!(
            body.frame().await.unwrap().unwrap().into_data().unwrap(),
            "big!"
        );
        assert!(body.frame().await.is_none());
        assert!(body.take_reusable().is_none());
        drop(tx);
    }

    #[tokio::test]
    async fn a_streamed_body_goes_chunked_while_the_response_streams_back() {
        let (conn, mut s) = pair().await;
        let total = 4 << 20;
        // An echo backend: answers at once, then returns what it reads.
        let backend = tokio::spawn(async move {
            let mut buf = Vec::new();
            let n = read_head(&mut s, &mut buf).await;
            let head = String::from_utf8(buf[..n].to_vec()).unwrap();
            assert!(head.contains("transfer-encoding: chunked\r\n"), "{head}");
            s.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await.unwrap();
            let mut raw = buf[n..].to_vec();
            s.write_all(&raw).await.unwrap();
            let mut b = vec![0u8; 65536];
            while !raw.ends_with(b"0\r\n\r\n") {
                let n = s.read(&mut b).await.unwrap();
                assert!(n > 0);
                raw.extend_from_slice(&b[..n]);
                s.write_all(&b[..n]).await.unwrap();
            }
            s.shutdown().await.unwrap();
            raw
        });
        let (tx, rx) = mpsc::channel(2);
        let feeder = tokio::spawn(async move {
            let mut sent = Vec::new();
            let mut i = 0u32;
            while sent.len() < total {
                let piece: Vec<u8> = (0..40_000).map(|j| (i + j) as u8).collect();
                i += 7;
                sent.extend_from_slice(&piece);
                tx.send(Bytes::from(piece)).await.unwrap();
            }
            sent
        });
        let parts = Request::put("/echo").body(()).unwrap().into_parts().0;
        let resp = send(conn, &parts, Payload::Stream(Chan(rx, None)), far())
            .await
            .ok()
            .unwrap();
        let mut body = resp.into_body();
        let mut echoed = Vec::new();
        while let Some(f) = body.frame().await {
            echoed.extend_from_slice(&f.unwrap().into_data().unwrap());
        }
        let sent = feeder.await.unwrap();
        let raw = backend.await.unwrap();
        assert_eq!(echoed, raw);
        // Undo the chunking: the bytes are the ones sent.
        let mut plain = Vec::new();
        let mut rest = &raw[..];
        loop {
            let line = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let size =
                usize::from_str_radix(std::str::from_utf8(&rest[..line]).unwrap(), 16).unwrap();
            rest = &rest[line + 2..];
            if size == 0 {
                break;
            }
            plain.extend_from_slice(&rest[..size]);
            rest = &rest[size + 2..];
        }
        assert_eq!(plain, sent);
        assert!(body.take_reusable().is_none());
    }

    #[tokio::test]
    async fn a_small_body_goes_out_with_the_head() {
        let (conn, mut s) = pair().await;
        let backend = tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            let n = s.read(&mut buf).await.unwrap();
            s.write_all(b"HTTP/1.1 204 No Content\r\n\r\n")
                .await
                .unwrap();
            buf.truncate(n);
            buf
        });
        let parts = Request::post("/p").body(()).unwrap().into_parts().0;
        let mut resp = send(
            conn,
            &parts,
            Payload::<Chan>::Bytes(Bytes::from_static(b"hello")),
            far(),
        )
        .await
        .ok()
        .unwrap();
        assert_eq!(resp.status(), 204);
        assert!(resp.body().is_end_stream());
        assert!(resp.body_mut().take_reusable().is_some());
        // One read saw the whole request (one write on a fresh loopback socket).
        assert_eq!(
            backend.await.unwrap(),
            b"POST /p HTTP/1.1\r\ncontent-length: 5\r\n\r\nhello"
        );
    }

    /// The stale keep-alive race: the backend closed the idle connection, weir wrote before
    /// it saw the close, and the backend's kernel reset the connection in answer. The
    /// request was never read, and the failure says how long the backend had been silent.
    #[tokio::test]
    async fn a_request_meeting_an_idle_close_comes_back_unread() {
        let (conn, s) = pair().await;
        // Idle, then the backend's timer fires.
        tokio::time::sleep(std::time::Duration::from_millis(30)).await;
        drop(s);
        let deadline = Instant::now() + std::time::Duration::from_secs(5);
        while conn.io.tcp_state().unwrap().open && Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let parts = Request::post("/p").body(()).unwrap().into_parts().0;
        let Err(e) = send(
            conn,
            &parts,
            Payload::<Chan>::Bytes(Bytes::from_static(b"x")),
            far(),
        )
        .await
        else {
            panic!("an answer on a closed connection");
        };
        assert!(e.unsent.is_none(), "the request went out");
        assert!(!e.may_have_been_processed(), "{}", e.error);
        let silent = e.silent_for.expect("measured");
        assert!(silent >= std::time::Duration::from_millis(20), "{silent:?}");
    }

    #[tokio::test]
    async fn a_dead_connection_hands_the_payload_back() {
        let (conn, s) = pair().await;
        // A reset: linger 0 then close.
        socket2::SockRef::from(&s)
            .set_linger(Some(std::time::Duration::ZERO))
            .unwrap();
        drop(s);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(conn.is_closed());
        let parts = Request::post("/p").body(()).unwrap().into_parts().0;
        let Err(e) = send(
            conn,
            &parts,
            Payload::<Chan>::Bytes(Bytes::from_static(b"x")),
            far(),
        )
        .await
        else {
            panic!("sent on a reset connection");
        };
        assert!(
            matches!(e.unsent, Some(Payload::Bytes(b)) if b == "x"),
            "{}",
            e.error
        );
    }
}
