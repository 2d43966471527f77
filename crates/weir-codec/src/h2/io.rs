//! A client connection as one duplex stream for the HTTP/2 loop: its read half with the
//! bytes the protocol selection already read (the preface, maybe more), and its write half.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use weir_transport::{ClientReader, ClientWriter};

pub struct Joined {
    /// Read before the handover; served before the socket.
    buffered: BytesMut,
    reader: ClientReader,
    writer: ClientWriter,
}

impl Joined {
    pub fn new(buffered: BytesMut, reader: ClientReader, writer: ClientWriter) -> Joined {
        Joined {
            buffered,
            reader,
            writer,
        }
    }
}

impl Joined {
    /// Has the kernel acknowledge now what arrived (`transport/acks.rs`).
    pub fn ack_now(&self) {
        self.reader.ack_now();
    }
}

impl AsyncRead for Joined {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.buffered.is_empty() {
            let n = this.buffered.len().min(buf.remaining());
            buf.put_slice(&this.buffered[..n]);
            this.buffered.advance(n);
            if this.buffered.is_empty() {
                // Give the read buffer's memory back.
                this.buffered = BytesMut::new();
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.reader).poll_read(cx, buf)
    }
}

impl AsyncWrite for Joined {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().writer).poll_write(cx, b)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().writer).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.writer.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().writer).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().writer).poll_shutdown(cx)
    }
}
