//! Sending the request: the head (with a small body in the same write),
//! then a streamed body, length-delimited or chunk-encoded.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http_body::Body;
use tokio::io::AsyncWrite;

use super::conn::H1ClientConnection;
use super::encode::Framing;
use super::error::{BoxError, Error};
use crate::send::Payload;
use weir_h1::fields::push_hex;

/// Bodies up to this size are copied behind the head, for a single write.
const INLINE_BODY: usize = 16 * 1024;

/// Why sending stopped.
pub(super) enum WriteError {
    /// The socket failed.
    Io(io::Error),
    /// The request body failed (the client went away) or broke its framing.
    Body(Error),
}

enum Stream<B> {
    /// The payload, until the first byte goes out (so that a connection
    /// found dead by the first write can hand it back).
    Held(Payload<B>),
    Body(B),
    Done,
}

pub(super) struct Writer<B> {
    /// How much of `conn.wbuf` (the head) is written.
    head_at: usize,
    /// Whether held bytes were copied behind the head.
    inline: bool,
    framing: Framing,
    /// Encoded pieces waiting to be written.
    out: VecDeque<Bytes>,
    stream: Stream<B>,
    done: bool,
    /// Successful writes so far (wrapping): tells the response timer that
    /// the request is still moving.
    writes: u32,
}

impl<B> Writer<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    /// `conn.wbuf` holds the head; `inline` when the payload bytes follow it there.
    pub fn new(held: Payload<B>, inline: bool, framing: Framing) -> Self {
        Writer {
            head_at: 0,
            inline,
            framing,
            out: VecDeque::new(),
            stream: Stream::Held(held),
            done: false,
            writes: 0,
        }
    }

    pub fn inline_limit() -> usize {
        INLINE_BODY
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    pub fn writes(&self) -> u32 {
        self.writes
    }

    pub fn sent_nothing(&self) -> bool {
        matches!(self.stream, Stream::Held(_))
    }

    /// The payload back, if not a byte of the request went out.
    pub fn take_unsent(&mut self) -> Option<Payload<B>> {
        match std::mem::replace(&mut self.stream, Stream::Done) {
            Stream::Held(p) => Some(p),
            _ => None,
        }
    }

    /// Stops sending: the exchange no longer needs the rest of the body.
    pub fn abandon(&mut self) {
        self.stream = Stream::Done;
        self.out.clear();
    }

    /// Writes as much as it can; `Ready(Ok)` once the whole request is out.
    pub fn poll(
        &mut self,
        conn: &mut H1ClientConnection,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), WriteError>> {
        if self.done {
            return Poll::Ready(Ok(()));
        }
        while self.head_at < conn.wbuf.len() {
            match Pin::new(&mut conn.io).poll_write(cx, &conn.wbuf[self.head_at..]) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(WriteError::Io(io::ErrorKind::WriteZero.into())))
                }
                Poll::Ready(Ok(n)) => {
                    self.head_at += n;
                    self.writes = self.writes.wrapping_add(1);
                    if let Stream::Held(p) = std::mem::replace(&mut self.stream, Stream::Done) {
                        self.start(p);
                    }
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(WriteError::Io(e))),
            }
        }
        loop {
            while !self.out.is_empty() {
                let mut slices = [IoSlice::new(&[]); 4];
                let mut n = 0;
                for (s, b) in slices.iter_mut().zip(self.out.iter()) {
                    *s = IoSlice::new(b);
                    n += 1;
                }
                match Pin::new(&mut conn.io).poll_write_vectored(cx, &slices[..n]) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Ok(0)) => {
                        return Poll::Ready(Err(WriteError::Io(io::ErrorKind::WriteZero.into())))
                    }
                    Poll::Ready(Ok(mut n)) => {
                        self.writes = self.writes.wrapping_add(1);
                        while n > 0 {
                            let Some(front) = self.out.front_mut() else {
                                break;
                            };
                            if n >= front.len() {
                                n -= front.len();
                                self.out.pop_front();
                            } else {
                                front.advance(n);
                                n = 0;
                            }
                        }
                    }
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(WriteError::Io(e))),
                }
            }
            let (Stream::Body(body), framing) = (&mut self.stream, &mut self.framing) else {
                self.done = true;
                return Poll::Ready(Ok(()));
            };
            match Pin::new(body).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(frame))) => {
                    // Trailers of a request body are dropped, as before.
                    let Ok(data) = frame.into_data() else {
                        continue;
                    };
                    if data.is_empty() {
                        continue;
                    }
                    match framing {
                        Framing::Length(left) => {
                            if data.len() as u64 > *left {
                                return Poll::Ready(Err(WriteError::Body(Error::BodyLength(
                                    "exceeds",
                                ))));
                            }
                            *left -= data.len() as u64;
                            self.out.push_back(data);
                        }
                        Framing::Chunked => {
                            let mut size = Vec::with_capacity(18);
                            push_hex(&mut size, data.len() as u64);
                            size.extend_from_slice(b"\r\n");
                            self.out.push_back(size.into());
                            self.out.push_back(data);
                            self.out.push_back(Bytes::from_static(b"\r\n"));
                        }
                    }
                }
                Poll::Ready(None) => {
                    match framing {
                        Framing::Length(0) => {}
                        Framing::Length(_) => {
                            return Poll::Ready(Err(WriteError::Body(Error::BodyLength(
                                "falls short of",
                            ))))
                        }
                        Framing::Chunked => self.out.push_back(Bytes::from_static(b"0\r\n\r\n")),
                    }
                    self.stream = Stream::Done;
                }
                Poll::Ready(Some(Err(e))) => {
                    return Poll::Ready(Err(WriteError::Body(Error::Body(e.into()))))
                }
            }
        }
    }

    /// The first bytes went out: what follows the head is now committed.
    fn start(&mut self, p: Payload<B>) {
        match p {
            Payload::Bytes(b) if !self.inline && !b.is_empty() => self.out.push_back(b),
            Payload::Bytes(_) => {}
            Payload::Stream(body) => {
                if self.framing != Framing::Length(0) {
                    self.stream = Stream::Body(body);
                }
            }
        }
    }
}
