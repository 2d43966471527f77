//! A minimal HTTP/1.1 client (hyper, no pool) for tests: one-shot requests or one
//! keep-alive connection whose reuse you control.

use std::io;
use std::net::{IpAddr, SocketAddr};

use bytes::Bytes;
use http::{header, HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpSocket, TcpStream};

/// A fully read response.
#[derive(Clone, Debug)]
pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Resp {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name)?.to_str().ok()
    }
}

/// One client connection; requests on it reuse it while the server keeps it alive.
pub struct HttpConn {
    addr: SocketAddr,
    tx: SendRequest<Full<Bytes>>,
}

impl HttpConn {
    pub async fn connect(addr: SocketAddr) -> io::Result<HttpConn> {
        Self::handshake(addr, TcpStream::connect(addr).await?).await
    }

    /// A connection from the local address `from` (e.g. 127.0.0.2, another loopback source).
    pub async fn connect_from(from: IpAddr, addr: SocketAddr) -> io::Result<HttpConn> {
        let socket = match from {
            IpAddr::V4(_) => TcpSocket::new_v4()?,
            IpAddr::V6(_) => TcpSocket::new_v6()?,
        };
        socket.bind(SocketAddr::new(from, 0))?;
        Self::handshake(addr, socket.connect(addr).await?).await
    }

    async fn handshake(addr: SocketAddr, stream: TcpStream) -> io::Result<HttpConn> {
        stream.set_nodelay(true)?;
        let (tx, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(io::Error::other)?;
        tokio::spawn(conn);
        Ok(HttpConn { addr, tx })
    }

    /// Sends `req` (a `Host` header is added when missing) and reads the whole response.
    pub async fn send(&mut self, mut req: Request<Full<Bytes>>) -> io::Result<Resp> {
        if !req.headers().contains_key(header::HOST) {
            let host = self
                .addr
                .to_string()
                .parse()
                .expect("socket addr is a valid header");
            req.headers_mut().insert(header::HOST, host);
        }
        self.tx.ready().await.map_err(io::Error::other)?;
        let resp = self.tx.send_request(req).await.map_err(io::Error::other)?;
        let (parts, body) = resp.into_parts();
        let body = body.collect().await.map_err(io::Error::other)?.to_bytes();
        Ok(Resp {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    }

    pub async fn get(&mut self, path: &str) -> io::Result<Resp> {
        self.send(Request::get(path).body(Full::default()).unwrap())
            .await
    }

    /// True once the server (or an error) closed the connection.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// GET `path` on a fresh connection.
pub async fn get(addr: SocketAddr, path: &str) -> io::Result<Resp> {
    HttpConn::connect(addr).await?.get(path).await
}

/// Sends `req` on a fresh connection.
pub async fn send(addr: SocketAddr, req: Request<Full<Bytes>>) -> io::Result<Resp> {
    HttpConn::connect(addr).await?.send(req).await
}
