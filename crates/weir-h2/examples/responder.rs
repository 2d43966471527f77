//! A bare HTTP/2 (h2c) responder on `weir_h2::server`: every request is answered `200` with
//! a 12-byte body once its own body is read. For checking the server connection alone with
//! h2spec, and measuring its CPU per request against other bare responders:
//!
//!   cargo run --release -p weir-h2 --example responder -- 127.0.0.1:9300
//!
//! One task per connection, reading and writing the socket itself: what weir's own server
//! loop will do, without the proxy behind it.

use std::collections::HashMap;

use bytes::BytesMut;
use http::header::{HeaderValue, CONTENT_TYPE};
use http::{HeaderMap, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use weir_h2::server::{Config, Event, H2ServerConnection};

const BODY: &[u8] = b"hello world\n";

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:9300".into());
    let listener = TcpListener::bind(&addr).await.expect("bind");
    println!("listening on {addr}");
    loop {
        let Ok((sock, _)) = listener.accept().await else {
            continue;
        };
        let _ = sock.set_nodelay(true);
        tokio::spawn(serve(sock));
    }
}

pub async fn serve(mut sock: TcpStream) {
    let mut c = H2ServerConnection::new(Config {
        max_streams: 100,
        max_header_list: 64 * 1024,
        stream_window: 1 << 20,
        connection_window: 1 << 20,
        connect_protocol: false,
    });
    let mut head = HeaderMap::new();
    head.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    let mut buf = BytesMut::with_capacity(16 * 1024);
    // Answers whose body waits for the client's window: bytes of BODY sent so far.
    let mut waiting: HashMap<u32, usize> = HashMap::new();
    loop {
        let out = c.output();
        if !out.is_empty() {
            if sock.write_all(out).await.is_err() {
                return;
            }
            out.clear();
        }
        if c.is_closed() {
            return;
        }
        match sock.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let _ = c.recv(&mut buf);
        while let Some(ev) = c.next_event() {
            let done = match ev {
                Event::Request {
                    stream, end_stream, ..
                } => end_stream.then_some(stream),
                Event::Data {
                    stream,
                    data,
                    end_stream,
                } => {
                    c.release(stream, data.len());
                    end_stream.then_some(stream)
                }
                Event::Trailers { stream, .. } => Some(stream),
                Event::Reset { stream, .. } => {
                    waiting.remove(&stream);
                    None
                }
                Event::Window { .. } => {
                    waiting.retain(|&s, sent| {
                        *sent += c.send_data(s, &BODY[*sent..], true);
                        *sent < BODY.len()
                    });
                    None
                }
                Event::GoAway { .. } => None,
            };
            if let Some(stream) = done {
                c.send_headers(stream, StatusCode::OK, &head, false);
                let sent = c.send_data(stream, BODY, true);
                if sent < BODY.len() {
                    waiting.insert(stream, sent);
                }
            }
        }
    }
}
