//! A request that is not idempotent reaches a backend's application at most
//! once: weir sends it again only when the backend provably
//! did not read it. Each backend here is scripted byte by byte and counts
//! the requests its "application" read whole.

use std::net::SocketAddr;

use weir_testkit::client::HttpConn;

use crate::common::{endpoints, free_addr, one_pool, Weir};
use crate::scripted::{Act, Scripted};

/// weir in front of `backend` alone, with retries generous enough that only
/// the rule decides.
fn weir_for(backend: SocketAddr) -> (SocketAddr, Weir) {
    let listen = free_addr();
    let w = Weir::start(
        &one_pool(
            listen,
            &endpoints(&[(backend, 1)]),
            "[pools.app.health]\neject_after = 0\n\
             [pools.app.retry]\nattempts = 3\nbudget_min_per_sec = 1000",
        ),
        &[listen],
    );
    (listen, w)
}

/// A GET answered on a new upstream connection (which weir then pools),
/// then a POST that weir sends on that pooled connection.
async fn get_then_post(listen: SocketAddr) -> weir_testkit::client::Resp {
    let mut c = HttpConn::connect(listen).await.unwrap();
    assert_eq!(c.get("/warm").await.unwrap().status, 200);
    let post = http::Request::post("/order")
        .header("host", "x")
        .body(http_body_util::Full::new(bytes::Bytes::from("order-1")))
        .unwrap();
    c.send(post).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_post_read_on_a_reused_connection_then_closed_unanswered_is_not_sent_again() {
    let backend = Scripted::spawn(&[Act::Answer, Act::ReadAndClose]).await;
    let (listen, _w) = weir_for(backend.addr);
    let r = get_then_post(listen).await;
    assert_eq!(r.status, 502, "{}", r.text());
    assert_eq!(r.header("x-weir-reason"), Some("upstream_reset"));
    let posts = backend.bodies().iter().filter(|b| *b == "order-1").count();
    assert_eq!(posts, 1, "the POST reached the application {posts} times");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_post_answered_with_a_malformed_head_is_not_sent_again() {
    let backend = Scripted::spawn(&[Act::Answer, Act::Malformed]).await;
    let (listen, _w) = weir_for(backend.addr);
    let r = get_then_post(listen).await;
    assert_eq!(r.status, 502, "{}", r.text());
    let posts = backend.bodies().iter().filter(|b| *b == "order-1").count();
    assert_eq!(posts, 1, "the POST reached the application {posts} times");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_post_the_backend_reset_unread_is_sent_again_and_answered_once() {
    // The stale keep-alive race's other face: the backend closed with the
    // request unread, so the kernel reset the connection. Nothing read it;
    // sending it again on a new connection is safe and saves the request.
    let backend = Scripted::spawn(&[Act::Answer, Act::CloseUnread]).await;
    let (listen, _w) = weir_for(backend.addr);
    let r = get_then_post(listen).await;
    assert_eq!((r.status.as_u16(), r.text()), (200, "ok\n".to_string()));
    let posts = backend.bodies().iter().filter(|b| *b == "order-1").count();
    assert_eq!(posts, 1, "the POST reached the application {posts} times");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_get_read_and_closed_unanswered_is_still_retried() {
    // Idempotent requests keep their retry: the client gets an answer.
    let backend = Scripted::spawn(&[Act::Answer, Act::ReadAndClose]).await;
    let (listen, _w) = weir_for(backend.addr);
    let mut c = HttpConn::connect(listen).await.unwrap();
    assert_eq!(c.get("/warm").await.unwrap().status, 200);
    let r = c.get("/again").await.unwrap();
    assert_eq!((r.status.as_u16(), r.text()), (200, "ok\n".to_string()));
}
