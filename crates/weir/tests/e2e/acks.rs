//! A peer that writes a message in pieces without TCP_NODELAY (Nagle's algorithm on, as in
//! many application servers and clients) sends each piece after the first only once weir's
//! kernel has acknowledged what went before; on a kept-alive connection Linux holds that ACK
//! back for 40 ms or more, hoping to carry it on weir's next bytes. weir has the kernel send
//! it at once when it waits for the rest of a message (`transport/acks.rs`; the h1 codecs'
//! `awaiting_rest`). Without that, every answer after a connection's first took 44 ms more
//! here (through HAProxy 2.6 and nginx 1.22 too: bench/acks.py), and so did every request
//! whose client wrote its body apart from its head; over TLS alike. Each case below fails
//! without its call.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::ServerConfig;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use weir_testkit::certs::Ca;
use weir_testkit::tls::server_config;

use crate::common::{endpoints, free_addr, Weir};
use crate::tls_kit::{client, connect};

const BODY: usize = 2048;
const GET: &[u8] = b"GET / HTTP/1.1\r\nhost: acks\r\n\r\n";

/// A keep-alive backend answering every request with a `BODY`-byte body, written in two
/// pieces: the first `split` bytes of the answer, then the rest. With `nagle` it leaves
/// TCP_NODELAY off, as the sockets of many servers are.
async fn piecewise_backend(split: usize, nagle: bool) -> SocketAddr {
    backend(split, nagle, None).await
}

/// [`piecewise_backend`], over TLS when given a config (each piece a record of its own).
async fn backend(split: usize, nagle: bool, tls: Option<Arc<ServerConfig>>) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let answer = format!(
        "HTTP/1.1 200 OK\r\ncontent-length: {BODY}\r\n\r\n{}",
        "x".repeat(BODY)
    );
    tokio::spawn(async move {
        loop {
            let Ok((s, _)) = l.accept().await else {
                return;
            };
            s.set_nodelay(!nagle).unwrap();
            let (answer, tls) = (answer.clone(), tls.clone());
            tokio::spawn(async move {
                match tls {
                    None => answer_in_pieces(s, answer.as_bytes(), split).await,
                    Some(cfg) => {
                        if let Ok(s) = TlsAcceptor::from(cfg).accept(s).await {
                            answer_in_pieces(s, answer.as_bytes(), split).await;
                        }
                    }
                }
            });
        }
    });
    addr
}

/// Reads requests off `s` (heads and bodies by their Content-Length) and answers each with
/// `answer`, cut at `split`, until the connection ends.
async fn answer_in_pieces<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    answer: &[u8],
    split: usize,
) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let length = content_length(&buf[..end]);
        while buf.len() < end + length {
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        buf.drain(..end + length);
        for piece in [&answer[..split], &answer[split..]] {
            if s.write_all(piece).await.is_err() || s.flush().await.is_err() {
                return;
            }
        }
    }
}

/// A head's Content-Length (0 without one).
fn content_length(head: &[u8]) -> usize {
    let head = String::from_utf8_lossy(head).to_ascii_lowercase();
    head.lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap())
}

/// How long a request on `conn`, written as `pieces` one after the other, takes to be
/// answered whole.
async fn timed<S: AsyncRead + AsyncWrite + Unpin>(conn: &mut S, pieces: &[&[u8]]) -> Duration {
    let start = Instant::now();
    for p in pieces {
        conn.write_all(p).await.unwrap();
        // A TLS client makes each piece a record of its own.
        conn.flush().await.unwrap();
    }
    read_answer(conn).await;
    start.elapsed()
}

/// As [`timed`], for a request that asks `100 Continue`: `head` in the pieces it is cut in,
/// then, once weir said to go on, `body` in its.
async fn timed_continue(conn: &mut TcpStream, head: &[&[u8]], body: &[&[u8]]) -> Duration {
    let start = Instant::now();
    for p in head {
        conn.write_all(p).await.unwrap();
    }
    let mut got = Vec::new();
    let mut chunk = [0u8; 1024];
    while !got.ends_with(b"\r\n\r\n") {
        let n = conn.read(&mut chunk).await.unwrap();
        assert!(n > 0, "weir closed: {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&chunk[..n]);
    }
    assert!(got.starts_with(b"HTTP/1.1 100 "), "{got:?}");
    for p in body {
        conn.write_all(p).await.unwrap();
    }
    read_answer(conn).await;
    start.elapsed()
}

/// Reads one `200` answer with a `BODY`-byte body off `conn`.
async fn read_answer<S: AsyncRead + Unpin>(conn: &mut S) {
    let mut got = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = conn.read(&mut chunk).await.unwrap();
        assert!(n > 0, "weir closed: {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&chunk[..n]);
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            assert!(got.starts_with(b"HTTP/1.1 200 "), "{got:?}");
            if got.len() >= end + 4 + BODY {
                return;
            }
        }
    }
}

/// Requests made on each connection ([`median_after_three`] of their times).
const ROUNDS: usize = 24;

/// The median of `times` without the first three: the kernel holds ACKs back only once a
/// connection has gone request, answer, request.
fn median_after_three(mut times: Vec<Duration>) -> Duration {
    let mut counted = times.split_off(3);
    counted.sort();
    counted[counted.len() / 2]
}

/// The median time of GETs on a new connection to `listen` from a client with TCP_NODELAY
/// ([`median_after_three`]).
async fn median_get(listen: SocketAddr) -> Duration {
    let mut c = TcpStream::connect(listen).await.unwrap();
    c.set_nodelay(true).unwrap();
    let mut times = Vec::new();
    for _ in 0..ROUNDS {
        times.push(timed(&mut c, &[GET]).await);
    }
    median_after_three(times)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_written_in_pieces_without_nodelay_are_not_held_for_delayed_acks() {
    let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {BODY}\r\n\r\n").len();
    // The split inside the body, inside the head, and a backend with TCP_NODELAY (what the
    // others are measured against, on the same loaded machine).
    let backends = [
        piecewise_backend(head + 1024, true).await,
        piecewise_backend(10, true).await,
        piecewise_backend(head + 1024, false).await,
    ];
    let listens = [free_addr(), free_addr(), free_addr()];
    let mut cfg = String::new();
    for (i, (l, b)) in listens.iter().zip(&backends).enumerate() {
        cfg += &format!(
            "[listeners.l{i}]\nbind = \"{l}\"\npool = \"p{i}\"\n\n[pools.p{i}]\n{}\n\n",
            endpoints(&[(*b, 1)])
        );
    }
    let _w = Weir::start(&cfg, &listens);

    // Each backend has its own client, all three asking at once: load on the machine falls
    // on them alike, and one connection's wait does not space out another's requests (a
    // connection quiet for longer than the delayed-ACK time no longer holds ACKs back).
    let asked = listens.map(|l| tokio::spawn(median_get(l)));
    let mut medians = Vec::new();
    for a in asked {
        medians.push(a.await.unwrap());
    }
    let [in_body, in_head, nodelay] = medians[..] else {
        unreachable!()
    };
    // Held back, each would take the kernel's delayed-ACK time (40 ms at the least) more
    // than the answer from the backend with TCP_NODELAY.
    let bound = nodelay + Duration::from_millis(20);
    assert!(
        in_body < bound && in_head < bound,
        "median answer split in the body {in_body:?}, in the head {in_head:?}, \
         against {nodelay:?} with TCP_NODELAY"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_written_in_pieces_without_nodelay_are_not_held_for_delayed_acks() {
    let up = piecewise_backend(BODY, false).await;
    let listen = free_addr();
    let _w = Weir::start(
        &format!(
            "[listeners.web]\nbind = \"{listen}\"\npool = \"app\"\n\n[pools.app]\n{}\n",
            endpoints(&[(up, 1)])
        ),
        &[listen],
    );
    let head: &[u8] = b"POST / HTTP/1.1\r\nhost: acks\r\ncontent-length: 1000\r\n\r\n";
    let asks: &[u8] =
        b"POST / HTTP/1.1\r\nhost: acks\r\ncontent-length: 1000\r\nexpect: 100-continue\r\n\r\n";
    let body: &[u8] = &[b'y'; 1000];
    // Each client asks on its own connection, all at once, as in the test above: a POST
    // written as its head, then its body; one cut inside the head; one that asks for `100
    // Continue`, its head cut and, after weir's go-ahead (bytes weir sent: the kernel holds
    // ACKs back again), its body in two; and the first from a client with TCP_NODELAY.
    let ask = |nagle: bool, pieces: Vec<&'static [u8]>, continued: Vec<&'static [u8]>| {
        tokio::spawn(async move {
            let mut c = TcpStream::connect(listen).await.unwrap();
            c.set_nodelay(!nagle).unwrap();
            let mut times = Vec::new();
            for _ in 0..ROUNDS {
                times.push(if continued.is_empty() {
                    timed(&mut c, &pieces).await
                } else {
                    timed_continue(&mut c, &pieces, &continued).await
                });
            }
            median_after_three(times)
        })
    };
    let (head, asks, body): (&'static [u8], &'static [u8], &'static [u8]) = (
        head.to_vec().leak(),
        asks.to_vec().leak(),
        body.to_vec().leak(),
    );
    let whole: &'static [u8] = [head, body].concat().leak();
    let asked = [
        ask(true, vec![head, body], vec![]),
        ask(true, vec![&whole[..10], &whole[10..]], vec![]),
        ask(
            true,
            vec![&asks[..10], &asks[10..]],
            vec![&body[..500], &body[500..]],
        ),
        ask(false, vec![head, body], vec![]),
    ];
    let mut medians = Vec::new();
    for a in asked {
        medians.push(a.await.unwrap());
    }
    let [body_apart, in_head, continued, nodelay] = medians[..] else {
        unreachable!()
    };
    let bound = nodelay + Duration::from_millis(20);
    assert!(
        body_apart < bound && in_head < bound && continued < bound,
        "median request with its body sent apart {body_apart:?}, cut in the head \
         {in_head:?}, after 100 Continue {continued:?}, against {nodelay:?} with TCP_NODELAY"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_in_pieces_over_tls_are_not_held_for_delayed_acks() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("acks ca");
    let ca_file = ca.write(dir.path(), "ca");
    let site = ca.leaf(&["acks.test"]).write(dir.path(), "site");
    let (cert, key) = ca.leaf_files(dir.path(), "api", &["api.internal"]);
    let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {BODY}\r\n\r\n").len();
    // Answers whole, for the clients' side; answers in two records from a TLS backend with
    // Nagle on; and in two pieces from a plain one with TCP_NODELAY (what it is measured
    // against).
    let whole = piecewise_backend(BODY, false).await;
    let tls_backend = backend(
        head + 1024,
        true,
        Some(server_config(&cert, &key, None).unwrap()),
    )
    .await;
    let fast = piecewise_backend(head + 1024, false).await;
    let [https, tls_up, plain_up] = [free_addr(), free_addr(), free_addr()];
    let cfg = format!(
        r#"
[listeners.https]
bind = "{https}"
pool = "whole"
[listeners.https.tls]
certificates = [{{ cert = "{}", key = "{}" }}]

[listeners.tls_up]
bind = "{tls_up}"
pool = "tls"

[listeners.plain_up]
bind = "{plain_up}"
pool = "fast"

[pools.whole]
{}

[pools.tls]
{}
[pools.tls.tls]
ca = "{}"
server_name = "api.internal"

[pools.fast]
{}
"#,
        site.cert.display(),
        site.key.display(),
        endpoints(&[(whole, 1)]),
        endpoints(&[(tls_backend, 1)]),
        ca_file.display(),
        endpoints(&[(fast, 1)]),
    );
    let _w = Weir::start(&cfg, &[https, tls_up, plain_up]);

    let tls = client(&ca.pem, &["http/1.1"], None);
    let post: &'static [u8] = b"POST / HTTP/1.1\r\nhost: acks.test\r\ncontent-length: 1000\r\n\r\n";
    let body: &'static [u8] = vec![b'y'; 1000].leak();
    // Over TLS from a client with Nagle on, its head and body as two records; the same from a
    // client with TCP_NODELAY; a GET answered by the TLS backend, and one by the plain one.
    // All at once, as in the tests above.
    let over_tls = |nagle: bool| {
        let tls = tls.clone();
        tokio::spawn(async move {
            let mut c = connect(&tls, https, Some("acks.test"))
                .await
                .unwrap()
                .stream;
            c.get_ref().0.set_nodelay(!nagle).unwrap();
            let mut times = Vec::new();
            for _ in 0..ROUNDS {
                times.push(timed(&mut c, &[post, body]).await);
            }
            median_after_three(times)
        })
    };
    let asked = [
        over_tls(true),
        over_tls(false),
        tokio::spawn(median_get(tls_up)),
        tokio::spawn(median_get(plain_up)),
    ];
    let mut medians = Vec::new();
    for a in asked {
        medians.push(a.await.unwrap());
    }
    let [client_nagle, client_nodelay, upstream_tls, upstream_plain] = medians[..] else {
        unreachable!()
    };
    let margin = Duration::from_millis(20);
    assert!(
        client_nagle < client_nodelay + margin && upstream_tls < upstream_plain + margin,
        "median request over TLS with its body a record apart {client_nagle:?} (with \
         TCP_NODELAY {client_nodelay:?}); answer in two records from a TLS upstream with Nagle \
         on {upstream_tls:?} (in two pieces over plain TCP with TCP_NODELAY {upstream_plain:?})"
    );
}
