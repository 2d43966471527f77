//! The demo's backends: a small HTTP/1.1 server on 127.0.0.1 that answers with its name
//! (`answer.rs` says what, by path), on weir's own request parser (weir-h1) over tokio.
//! Part of the binary so that `weir demo` needs nothing but weir; the test kit's backends,
//! with every knob a test needs, stay out of the product.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::BytesMut;
use http::{Method, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;
use tracing::debug;
use weir_h1::decode::Decoder;
use weir_h1::fields::push_field;
use weir_h1::request::{self, Head};
use weir_h1::ParseError;

use super::answer::{self, Answer};

/// The largest request head read (a larger one is answered 431).
const MAX_HEAD: usize = 64 * 1024;

/// A running demo backend. Dropping it stops accepting; open connections end with the
/// process.
pub struct Backend {
    conf: Arc<Conf>,
    addr: SocketAddr,
    accept: AbortHandle,
}

struct Conf {
    name: String,
    /// Each answer waits a uniform draw from this range first, as a real service's would.
    latency: Range<Duration>,
}

impl Backend {
    /// Listens on 127.0.0.1, on a port of the system's choosing.
    pub async fn spawn(name: &str, latency: Range<Duration>) -> io::Result<Backend> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let conf = Arc::new(Conf {
            name: name.to_owned(),
            latency,
        });
        let accept = tokio::spawn(accept(listener, conf.clone())).abort_handle();
        Ok(Backend { conf, addr, accept })
    }

    pub fn name(&self) -> &str {
        &self.conf.name
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn accept(listener: TcpListener, conf: Arc<Conf>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let conf = conf.clone();
                tokio::spawn(async move {
                    if let Err(e) = serve(stream, &conf).await {
                        debug!(backend = %conf.name, "demo backend connection: {e}");
                    }
                });
            }
            // Out of file descriptors, say: wait for some to close rather than spin.
            Err(e) => {
                debug!(backend = %conf.name, "demo backend accept: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// One connection: its requests in turn, until the client closes it or asks to.
async fn serve(mut stream: TcpStream, conf: &Conf) -> io::Result<()> {
    let mut buf = BytesMut::with_capacity(4096);
    loop {
        let mut head = match read_head(&mut stream, &mut buf).await? {
            Ok(Some(head)) => head,
            Ok(None) => return Ok(()),
            Err(e) => {
                // A head it cannot read: its status, then the connection closes (an
                // HTTP/2 preface has none, it only closes).
                if let Some(status) = e.status().and_then(|s| StatusCode::from_u16(s).ok()) {
                    let refused = answer::text(status, format!("{e}\n"));
                    stream
                        .write_all(&encode(&refused, &conf.name, false, true))
                        .await?;
                }
                return Ok(());
            }
        };
        if head.expect_continue {
            stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
        }
        let body_len = read_body(&mut stream, &mut buf, &mut head.body).await?;
        tokio::time::sleep(draw(&conf.latency)).await;
        let answer = answer::to(&conf.name, &head.parts, body_len);
        let head_only = head.parts.method == Method::HEAD;
        let close = !head.keep_alive;
        stream
            .write_all(&encode(&answer, &conf.name, head_only, close))
            .await?;
        if close {
            return Ok(());
        }
    }
}

/// The next request head: `Ok(None)` when the client closed between requests.
async fn read_head(
    stream: &mut TcpStream,
    buf: &mut BytesMut,
) -> io::Result<Result<Option<Head>, ParseError>> {
    loop {
        match request::parse(buf, MAX_HEAD) {
            Ok(None) => {}
            other => return Ok(other),
        }
        if stream.read_buf(buf).await? == 0 {
            return match buf.is_empty() {
                true => Ok(Ok(None)),
                false => Err(io::ErrorKind::UnexpectedEof.into()),
            };
        }
    }
}

/// Reads the request's body and drops it; its length.
async fn read_body(
    stream: &mut TcpStream,
    buf: &mut BytesMut,
    body: &mut Decoder,
) -> io::Result<u64> {
    let mut len = 0;
    while !body.is_done() {
        match body.decode(buf).map_err(io::Error::other)? {
            Some(data) => len += data.len() as u64,
            None if body.is_done() => {}
            None => {
                if stream.read_buf(buf).await? == 0 {
                    body.on_eof().map_err(io::Error::other)?;
                }
            }
        }
    }
    Ok(len)
}

/// The answer's bytes on the wire: status line, Date (an origin server with a clock sends
/// one), `x-upstream: NAME`, the body's type and length, and `connection: close` when the
/// connection ends after it. A HEAD's answer has the fields but not the body.
fn encode(a: &Answer, name: &str, head_only: bool, close: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(192 + a.body.len());
    let reason = a.status.canonical_reason().unwrap_or("");
    out.extend_from_slice(format!("HTTP/1.1 {} {reason}\r\n", a.status.as_u16()).as_bytes());
    let date = httpdate::fmt_http_date(SystemTime::now());
    push_field(&mut out, b"date", date.as_bytes());
    push_field(&mut out, b"x-upstream", name.as_bytes());
    if let Some(ty) = a.content_type {
        push_field(&mut out, b"content-type", ty.as_bytes());
        push_field(
            &mut out,
            b"content-length",
            a.body.len().to_string().as_bytes(),
        );
    }
    if close {
        push_field(&mut out, b"connection", b"close");
    }
    out.extend_from_slice(b"\r\n");
    if !head_only {
        out.extend_from_slice(&a.body);
    }
    out
}

/// A uniform draw from `r`.
fn draw(r: &Range<Duration>) -> Duration {
    r.start + (r.end.saturating_sub(r.start)).mul_f64(fastrand::f64())
}
