//! The same bare responder as `responder.rs` on hyper's HTTP/2 server (the `h2` crate, with
//! a task per stream as hyper runs it), for measuring the two side by side
//! (`bench/h2-codec.sh`): every request answered `200` with a 12-byte body.
//!
//!   cargo run --release -p weir-h2 --example h2_crate_responder -- 127.0.0.1:9301

use std::convert::Infallible;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::Response;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

const BODY: &[u8] = b"hello world\n";

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:9301".into());
    let listener = TcpListener::bind(&addr).await.expect("bind");
    println!("listening on {addr}");
    loop {
        let Ok((sock, _)) = listener.accept().await else {
            continue;
        };
        let _ = sock.set_nodelay(true);
        tokio::spawn(async move {
            let answer = service_fn(|_req| async {
                Ok::<_, Infallible>(
                    Response::builder()
                        .header(CONTENT_TYPE, "text/plain")
                        .body(Full::new(Bytes::from_static(BODY)))
                        .expect("a response"),
                )
            });
            let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(sock), answer)
                .await;
        });
    }
}
