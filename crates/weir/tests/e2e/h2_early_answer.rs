//! An HTTP/2 request answered before its body is in (a body_limit's 413 here): weir reads and
//! drops what follows for a while, so that a client finishing its upload before it reads the
//! answer gets it cleanly, then asks the client to stop with RST_STREAM NO_ERROR (RFC 9113
//! §8.1): an upload that goes on and on, fast or slow, is cut, not read until the client's
//! own timeout. The connection serves on.

use std::net::SocketAddr;
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use tokio::net::TcpStream;
use weir_testkit::HttpUpstream;

use crate::common::{free_addr, Weir};

async fn start() -> (Weir, SocketAddr, HttpUpstream) {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "app"
[pools.app]
endpoints = [{{ addr = "{}" }}]
[filters.small]
kind = "body_limit"
max_bytes = "1KiB"
[routes.upload]
listener = "web"
path_prefix = "/upload"
pool = "app"
filters = ["small"]
"#,
        up.addr()
    );
    let w = Weir::start(&cfg, &[listen]);
    (w, listen, up)
}

async fn client(addr: SocketAddr) -> h2::client::SendRequest<Bytes> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}

/// How an endless upload ended: the reset's reason, the bytes sent, and when.
struct Ended {
    reason: Option<h2::Reason>,
    sent: usize,
    at: Instant,
}

/// Sends `chunk` bytes at a time, pausing `pause` between them, until the stream is reset
/// (or 60 s pass, which the callers count as never).
async fn upload_forever(mut send: h2::SendStream<Bytes>, chunk: usize, pause: Duration) -> Ended {
    let data = Bytes::from(vec![b'x'; chunk]);
    let mut sent = 0;
    let give_up = Instant::now() + Duration::from_secs(60);
    loop {
        if Instant::now() > give_up {
            return Ended {
                reason: None,
                sent,
                at: Instant::now(),
            };
        }
        send.reserve_capacity(chunk);
        // Room to send, or the reset that ends it.
        let step = std::future::poll_fn(|cx| {
            if let Poll::Ready(r) = send.poll_reset(cx) {
                return Poll::Ready(Err(r.ok()));
            }
            send.poll_capacity(cx).map(Ok)
        })
        .await;
        match step {
            Err(reason) => {
                return Ended {
                    reason,
                    sent,
                    at: Instant::now(),
                }
            }
            Ok(Some(Ok(n))) => {
                if send.send_data(data.slice(..n.min(chunk)), false).is_err() {
                    let reason = std::future::poll_fn(|cx| send.poll_reset(cx)).await.ok();
                    return Ended {
                        reason,
                        sent,
                        at: Instant::now(),
                    };
                }
                sent += n.min(chunk);
            }
            Ok(Some(Err(e))) => {
                return Ended {
                    reason: e.reason(),
                    sent,
                    at: Instant::now(),
                }
            }
            Ok(None) => {
                let reason = std::future::poll_fn(|cx| send.poll_reset(cx)).await.ok();
                return Ended {
                    reason,
                    sent,
                    at: Instant::now(),
                };
            }
        }
        if !pause.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                r = std::future::poll_fn(|cx| send.poll_reset(cx)) => {
                    return Ended { reason: r.ok(), sent, at: Instant::now() };
                }
            }
        }
    }
}

/// A POST to `/upload` that never ends its body: (the answer's status, how the upload ended,
/// when the answer came).
async fn endless_post(
    c: &h2::client::SendRequest<Bytes>,
    addr: SocketAddr,
    chunk: usize,
    pause: Duration,
) -> (u16, Ended, Instant) {
    let mut c = c.clone().ready().await.unwrap();
    let req = Request::post(format!("http://{addr}/upload"))
        .body(())
        .unwrap();
    let (resp, send) = c.send_request(req, false).unwrap();
    let uploading = tokio::spawn(upload_forever(send, chunk, pause));
    let resp = tokio::time::timeout(Duration::from_secs(20), resp)
        .await
        .expect("an answer")
        .unwrap();
    let answered = Instant::now();
    let status = resp.status().as_u16();
    (status, uploading.await.unwrap(), answered)
}

async fn still_serves(c: &h2::client::SendRequest<Bytes>, addr: SocketAddr) {
    let mut c = c.clone().ready().await.unwrap();
    let req = Request::get(format!("http://{addr}/after"))
        .body(())
        .unwrap();
    let (resp, _) = c.send_request(req, true).unwrap();
    let resp = tokio::time::timeout(Duration::from_secs(20), resp)
        .await
        .expect("an answer")
        .unwrap();
    assert_eq!(resp.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fast_endless_upload_after_its_answer_is_reset_with_no_error() {
    let (_w, listen, up) = start().await;
    let c = client(listen).await;
    let (status, ended, _) = endless_post(&c, listen, 64 * 1024, Duration::ZERO).await;
    assert_eq!(status, 413);
    assert_eq!(
        ended.reason,
        Some(h2::Reason::NO_ERROR),
        "sent {}",
        ended.sent
    );
    // 16 MiB read and dropped after the answer, plus what the windows let through.
    assert!(ended.sent < 20 << 20, "sent {}", ended.sent);
    still_serves(&c, listen).await;
    assert_eq!(
        up.requests(),
        1,
        "only the request after it reached the backend"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_endless_upload_after_its_answer_is_reset_with_no_error() {
    let (_w, listen, _up) = start().await;
    let c = client(listen).await;
    let (status, ended, answered) =
        endless_post(&c, listen, 1024, Duration::from_millis(100)).await;
    assert_eq!(status, 413);
    assert_eq!(
        ended.reason,
        Some(h2::Reason::NO_ERROR),
        "sent {}",
        ended.sent
    );
    let lingered = ended.at.saturating_duration_since(answered);
    assert!(
        lingered < Duration::from_secs(30),
        "reset after {lingered:?}"
    );
    still_serves(&c, listen).await;
}
