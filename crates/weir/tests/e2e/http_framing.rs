//! Request framing on the client side, raw bytes against the real binary:
//! what could be read two ways is refused (no request smuggling), and
//! pipelined requests are each answered, in order.

use std::time::Duration;

use weir_testkit::client;
use weir_testkit::HttpUpstream;

use crate::common::{endpoints, free_addr, one_pool, raw_exchange, Weir};

/// Sends `bytes`; the answer must be weir's refusal with `status`, reason
/// `bad_request`, closing the connection. Returns the answer.
async fn refused(listen: std::net::SocketAddr, bytes: &[u8], status: &str) -> String {
    let text = raw_exchange(listen, bytes, Duration::from_secs(3)).await;
    let what = String::from_utf8_lossy(bytes);
    assert!(
        text.starts_with(&format!("HTTP/1.1 {status} ")),
        "{what:?} -> {text:?}"
    );
    assert!(
        text.to_ascii_lowercase().contains("connection: close"),
        "{what:?} -> {text:?}"
    );
    assert!(text.contains("bad_request"), "{what:?} -> {text:?}");
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ambiguous_framing_is_refused_before_any_upstream() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );
    let cases: [(&[u8], &str); 12] = [
        // TE.CL: Transfer-Encoding first, then Content-Length.
        (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n5c\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n0\r\n\r\n", "400"),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\nContent-Length: 5\r\n\r\nhello!", "400"),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 6\r\n\r\nhello!", "400"),
        (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\nabc", "400"),
        (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", "400"),
        (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "400"),
        (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", "400"),
        (b"POST / HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "400"),
        // Codings weir cannot pass on: 501 Not Implemented (RFC 9112 §6.1).
        (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", "501"),
        // obs-fold, and whitespace between a field name and its colon.
        (b"GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n folded\r\n\r\n", "400"),
        (b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n", "400"),
        // An invalid chunk size.
        (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", "400"),
    ];
    for (bytes, status) in cases {
        let text = refused(listen, bytes, status).await;
        assert_eq!(text.matches("HTTP/1.1").count(), 1, "{text:?}");
    }
    assert_eq!(up.requests(), 0);
    assert_eq!(client::get(listen, "/").await.unwrap().status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pipelined_requests_are_answered_in_order() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );
    // Three requests in one write: the bytes after each belong to the next.
    let input = b"GET /one HTTP/1.1\r\nHost: x\r\n\r\n\
POST /two HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n\
PUT /three HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
    let text = raw_exchange(listen, input, Duration::from_secs(5)).await;
    assert_eq!(text.matches("HTTP/1.1 200 OK").count(), 3, "{text}");
    assert!(
        text.to_ascii_lowercase().contains("connection: close"),
        "{text}"
    );
    let log = up.log();
    let seen: Vec<(&str, u64)> = log.iter().map(|r| (r.path.as_str(), r.body_len)).collect();
    assert_eq!(seen, [("/one", 0), ("/two", 3), ("/three", 2)]);
}

/// A response with `Connection: close` is followed by the FIN at once
/// (weir closes without a `shutdown` first; the client must not wait).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn connection_close_ends_with_eof_at_once() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );
    for _ in 0..5 {
        let started = std::time::Instant::now();
        let text = raw_exchange(
            listen,
            b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            Duration::from_secs(5),
        )
        .await;
        assert!(text.starts_with("HTTP/1.1 200 "), "{text}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "EOF came after {:?}",
            started.elapsed()
        );
    }
}

/// What a strict parser refuses and weir used to pass on: a
/// Host that is not `host[:port]`, a chunk extension without a name,
/// trailer lines that are not field lines, `*` for a method other than
/// OPTIONS; and CONNECT, which no listener tunnels: 405 with `Allow`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_smaller_edges_are_refused_before_any_upstream() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );
    let cases: [(&[u8], &str); 8] = [
        (b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", "400"),
        (b"GET / HTTP/1.1\r\nHost: user@evil\r\n\r\n", "400"),
        (b"GET * HTTP/1.1\r\nHost: x\r\n\r\n", "400"),
        (b"GET example.com:80 HTTP/1.1\r\nHost: x\r\n\r\n", "400"),
        (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;\r\nhello\r\n0\r\n\r\n", "400"),
        (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nno colon here\r\n\r\n", "400"),
        (b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", "405"),
        (b"CONNECT / HTTP/1.1\r\nHost: x\r\n\r\n", "405"),
    ];
    for (bytes, status) in cases {
        let text = refused(listen, bytes, status).await;
        if status == "405" {
            assert!(
                text.to_ascii_lowercase().contains("\r\nallow: get, "),
                "{text:?}"
            );
        }
    }
    // Whatever was cut mid-body never completed upstream; the rest never got there.
    let complete = up.log().iter().filter(|r| r.body_len == 5).count();
    assert_eq!(complete, 0, "{:?}", up.log());
    assert!(up.log().iter().all(|r| r.method != http::Method::CONNECT));
    // What is valid still passes: OPTIONS *, extensions with names, field-line trailers.
    for ok in [
        &b"OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"[..],
        b"POST / HTTP/1.1\r\nHost: x:8080\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n5;a=\"b c\"\r\nhello\r\n0\r\nx-sum: 1\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: [::1]:80\r\nConnection: close\r\n\r\n",
    ] {
        let text = raw_exchange(listen, ok, Duration::from_secs(3)).await;
        assert!(text.starts_with("HTTP/1.1 200 "), "{:?} -> {text:?}", String::from_utf8_lossy(ok));
    }
}
