//! An `h2` crate client stream as a byte stream, for speaking WebSocket over HTTP/2 (RFC 8441)
//! to weir the way a browser does: reads take DATA frames (given back to the window once
//! read), writes wait for window. END_STREAM is EOF, both ways.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Buf, Bytes};
use h2::{RecvStream, SendStream};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub struct Tunnel {
    recv: RecvStream,
    send: SendStream<Bytes>,
    /// What the last DATA frame held beyond the reader's buffer.
    pending: Bytes,
    shut: bool,
}

impl Tunnel {
    pub fn new(recv: RecvStream, send: SendStream<Bytes>) -> Tunnel {
        Tunnel {
            recv,
            send,
            pending: Bytes::new(),
            shut: false,
        }
    }
}

fn io_error(e: h2::Error) -> io::Error {
    match e.get_io() {
        Some(_) => e
            .into_io()
            .unwrap_or_else(|| io::ErrorKind::BrokenPipe.into()),
        None => io::Error::new(io::ErrorKind::ConnectionReset, e),
    }
}

impl AsyncRead for Tunnel {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.pending.is_empty() {
            match ready!(this.recv.poll_data(cx)) {
                Some(Ok(data)) => {
                    let _ = this.recv.flow_control().release_capacity(data.len());
                    this.pending = data;
                }
                Some(Err(e)) => return Poll::Ready(Err(io_error(e))),
                // END_STREAM: the peer is done sending.
                None => return Poll::Ready(Ok(())),
            }
        }
        let n = this.pending.len().min(buf.remaining());
        buf.put_slice(&this.pending[..n]);
        this.pending.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Tunnel {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        loop {
            let room = this.send.capacity();
            if room > 0 {
                let n = room.min(buf.len());
                this.send
                    .send_data(Bytes::copy_from_slice(&buf[..n]), false)
                    .map_err(io_error)?;
                return Poll::Ready(Ok(n));
            }
            this.send.reserve_capacity(buf.len());
            match ready!(this.send.poll_capacity(cx)) {
                Some(Ok(_)) => {}
                Some(Err(e)) => return Poll::Ready(Err(io_error(e))),
                None => return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // h2's connection writes what the streams queued.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.shut {
            this.shut = true;
            this.send.send_data(Bytes::new(), true).map_err(io_error)?;
        }
        Poll::Ready(Ok(()))
    }
}
