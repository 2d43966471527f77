//! Which protocol a client connection speaks, and the codec that then serves it: one state
//! machine for every connection, in three steps.
//!
//! 1. Accepted (TLS done, if the listener terminates it): ALPN names the protocol when the
//!    client offered one weir speaks: `h2` is HTTP/2, anything else HTTP/1.1.
//! 2. Sniffing, without ALPN (plain TCP, or a TLS client that offered none): the first
//!    bytes name it. The HTTP/2 preface's first line (`PRI * HTTP/2.0`) is HTTP/2 with
//!    prior knowledge (h2c; the codec checks the rest of the preface); bytes that cannot
//!    begin it are HTTP/1.1, which needs only the first byte of almost any request. Bytes
//!    that may still begin it are waited for, so the choice never depends on how the
//!    client's bytes were cut.
//! 3. Serving: the chosen codec gets the stream with the bytes already read, and serves it
//!    until it ends, or (HTTP/1.1) until it waits for its next request: the owner then
//!    holds the small [`h1::Idle`] and resumes it when bytes come, so that an idle
//!    keep-alive connection holds none of the request machinery.
//!
//! The first read is the one the HTTP/1.1 codec would make (same size, through the same
//! reader), and its bytes are the codec's first buffer: HTTP/1.1 pays no extra system call
//! or copy for the choice. A new protocol is a `Protocol` variant, how ALPN or the first
//! bytes name it, and its arm in `serve`.

use std::fmt::Display;
use std::future::poll_fn;
use std::pin::Pin;
use std::task::Poll;

use bytes::BytesMut;
use http_body::Body;
use tokio_util::io::poll_read_buf;
use tokio_util::sync::CancellationToken;

use super::control::{DrainFlags, Limits};
use super::handoff::Handoff;
use super::serve::Serve;
use crate::h1::server::{self as h1, ReqBody};
use crate::h2::request_body::RequestBody;
use crate::h2::server as h2;
use weir_transport::ClientStream;

/// A protocol weir serves client connections with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Http1,
    Http2,
}

/// The HTTP/2 connection preface's first line (RFC 9113 §3.4): no HTTP/1 request starts so
/// (its version is not one), so these bytes alone say HTTP/2.
const PREFACE_LINE: &[u8] = b"PRI * HTTP/2.0";

/// The first read's room: the HTTP/1.1 codec's first read size (`h1/server/reader.rs`).
const FIRST_READ: usize = 8 * 1024;

/// Where a connection's way through selection stands.
enum Step {
    /// Just accepted: ALPN may name the protocol.
    Accepted,
    /// No ALPN: the first bytes will name it.
    Sniffing,
    /// The codec that serves the connection until it ends.
    Serving(Protocol),
}

/// The protocol ALPN chose, if the client offered any weir speaks.
pub fn by_alpn(alpn: Option<&[u8]>) -> Option<Protocol> {
    match alpn? {
        b"h2" => Some(Protocol::Http2),
        _ => Some(Protocol::Http1),
    }
}

/// The protocol a connection's first bytes name; `None` while they may still begin the
/// HTTP/2 preface (no bytes at all included).
pub fn by_first_bytes(read: &[u8]) -> Option<Protocol> {
    if read.starts_with(PREFACE_LINE) {
        Some(Protocol::Http2)
    } else if PREFACE_LINE.starts_with(read) {
        None
    } else {
        Some(Protocol::Http1)
    }
}

/// Serves a client connection until it ends or pauses, as HTTP/1.1, waiting for its next
/// request or switched to another protocol (then its [`h1::Pause`]): chooses its protocol, then that protocol's codec serves it with
/// `service`. `ctl` and `drain` are the owner's say over it (see [`DrainFlags`]).
pub async fn run<'a, S>(
    stream: ClientStream,
    service: &'a S,
    ctl: &'a DrainFlags,
    drain: &CancellationToken,
    limits: Limits,
) -> Option<h1::Pause<'a>>
where
    S: Serve,
    S::ReqBody: From<ReqBody> + From<RequestBody> + Default + Send,
    <S::Body as Body>::Error: Display + Send + 'static,
{
    let alpn = by_alpn(stream.tls().and_then(|t| t.alpn.as_deref()));
    let mut conn = Handoff::new(stream);
    let mut step = Step::Accepted;
    loop {
        step = match step {
            Step::Accepted => match alpn {
                Some(p) => Step::Serving(p),
                None => Step::Sniffing,
            },
            Step::Sniffing => match sniff(&mut conn, service).await {
                Some(p) => Step::Serving(p),
                // The client left (or the read failed) before it said.
                None => return None,
            },
            Step::Serving(Protocol::Http1) => {
                return h1::serve(conn, service, ctl, limits.max_head).await
            }
            // Boxed: inline, HTTP/2's state would enlarge every connection's future, idle
            // HTTP/1.1 ones too.
            Step::Serving(Protocol::Http2) => {
                Box::pin(h2::run(conn, service, ctl, drain, limits)).await;
                return None;
            }
        };
    }
}

/// Reads the connection's first bytes until they name its protocol; `None` if the client
/// leaves first. While none are here, it holds no buffer (as an idle HTTP/1.1 connection
/// between requests holds none).
async fn sniff<S: Serve>(conn: &mut Handoff, service: &S) -> Option<Protocol> {
    // A preface cut short has what came acknowledged at once, as an HTTP/1.1 head cut
    // short does (`transport/acks.rs`).
    let mut acked = false;
    poll_fn(|cx| loop {
        if let Some(p) = by_first_bytes(&conn.read) {
            return Poll::Ready(Some(p));
        }
        if conn.read.capacity() - conn.read.len() < FIRST_READ / 4 {
            conn.read.reserve(FIRST_READ);
        }
        match poll_read_buf(Pin::new(&mut conn.reader), cx, &mut conn.read) {
            Poll::Ready(Ok(0) | Err(_)) => return Poll::Ready(None),
            Poll::Ready(Ok(_)) => service.request_arriving(),
            Poll::Pending if conn.read.is_empty() => {
                conn.read = BytesMut::new();
                return Poll::Pending;
            }
            Poll::Pending => {
                if !acked {
                    acked = true;
                    conn.reader.ack_now();
                }
                return Poll::Pending;
            }
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpn_names_the_protocol_when_offered() {
        assert_eq!(by_alpn(Some(b"h2")), Some(Protocol::Http2));
        assert_eq!(by_alpn(Some(b"http/1.1")), Some(Protocol::Http1));
        assert_eq!(by_alpn(None), None);
    }

    #[test]
    fn the_preface_line_says_http2_and_its_beginnings_wait() {
        let preface = weir_h2::frame::PREFACE;
        assert!(preface.starts_with(PREFACE_LINE));
        assert_eq!(by_first_bytes(preface), Some(Protocol::Http2));
        // However the preface is cut, no piece of it decides otherwise.
        for n in 0..PREFACE_LINE.len() {
            assert_eq!(by_first_bytes(&preface[..n]), None, "{n} bytes");
        }
        for n in PREFACE_LINE.len()..=preface.len() {
            assert_eq!(
                by_first_bytes(&preface[..n]),
                Some(Protocol::Http2),
                "{n} bytes"
            );
        }
    }

    #[test]
    fn anything_else_is_http1_as_soon_as_it_differs() {
        for first in [
            &b"G"[..],
            b"POST / HTTP/1.1\r\n",
            b"PRI * HTTP/1.1\r\n",
            b"\r\n",
        ] {
            assert_eq!(by_first_bytes(first), Some(Protocol::Http1), "{first:?}");
        }
        assert_eq!(by_first_bytes(b"P"), None);
        assert_eq!(by_first_bytes(b"PO"), Some(Protocol::Http1));
    }
}
