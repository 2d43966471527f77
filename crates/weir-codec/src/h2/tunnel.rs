//! A client's HTTP/2 stream as a byte stream, for a tunnel through it: WebSocket over
//! HTTP/2 (RFC 8441's extended CONNECT), relayed to an upstream connection that switched to
//! WebSocket. Reads take the stream's DATA (given back to the client's window once read);
//! writes queue bytes the connection's loop sends as the client's window allows, and wait
//! once a bounded amount is queued, so a client that stops reading holds the writer back
//! instead of filling memory. END_STREAM is the tunnel's EOF, both ways.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::shared::{Part, StreamGone, StreamShared};

pub struct Tunnel {
    shared: Arc<StreamShared>,
    /// What the last DATA frame held beyond the reader's buffer.
    pending: Bytes,
}

impl Tunnel {
    pub fn new(shared: Arc<StreamShared>) -> Tunnel {
        Tunnel {
            shared,
            pending: Bytes::new(),
        }
    }
}

fn io_error(e: StreamGone) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionReset, e)
}

impl AsyncRead for Tunnel {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        while this.pending.is_empty() {
            match std::task::ready!(this.shared.poll_next(cx)) {
                Some(Ok(Part::Data(d))) => this.pending = d,
                // Trailers have no place in a tunnel: skipped.
                Some(Ok(Part::Trailers(_))) => {}
                Some(Err(e)) => return Poll::Ready(Err(io_error(e))),
                // END_STREAM: the client is done sending.
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
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        self.shared.poll_put(cx, buf).map_err(io_error)
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // The connection's loop writes what is queued in its next pass.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.shared.shut();
        Poll::Ready(Ok(()))
    }
}
