//! A peer that writes a message in pieces without TCP_NODELAY (Nagle's algorithm on, as in
//! many application servers and clients) sends each piece after the first only once weir's
//! kernel has acknowledged what went before; on a kept-alive connection Linux holds that ACK
//! back for 40 ms or more, hoping to carry it on weir's next bytes. weir has the kernel send
//! it at once when it waits for the rest of a message (`transport/acks.rs`; the h1 codecs'
//! `awaiting_rest`). Without that, every answer after a connection's first took 44 ms more
//! here (through HAProxy 2.6 and nginx 1.22 too: bench/acks.py), and so did every request
//! whose client wrote its body apart from its head; over TLS alike; over HTTP/2, every
//! request whose DATA came after its HEADERS (there HAProxy and nginx did not wait), and every
//! answer from an HTTP/2 backend whose DATA came after its HEADERS (HAProxy waits too). Each
//! case below fails without its call.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::ServerConfig;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use weir_testkit::certs::Ca;
use weir_testkit::tls::server_config;

use crate::common::{endpoints, free_addr, one_pool, Weir};
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

/// A config with a listener per backend, each to a pool of that backend alone (with the
/// keys `pool_extra` in each pool's table), and the listeners' addresses.
fn listener_per_backend<const N: usize>(
    backends: [SocketAddr; N],
    pool_extra: &str,
) -> (String, [SocketAddr; N]) {
    let listens = backends.map(|_| free_addr());
    let mut cfg = String::new();
    for (i, (l, b)) in listens.iter().zip(backends).enumerate() {
        cfg += &format!(
            "[listeners.l{i}]\nbind = \"{l}\"\npool = \"p{i}\"\n\n[pools.p{i}]\n{}\n{pool_extra}\n",
            endpoints(&[(b, 1)])
        );
    }
    (cfg, listens)
}

/// What the clients measured, in the order they were asked.
async fn medians<const N: usize>(asked: [tokio::task::JoinHandle<Duration>; N]) -> [Duration; N] {
    let mut out = [Duration::ZERO; N];
    for (o, a) in out.iter_mut().zip(asked) {
        *o = a.await.unwrap();
    }
    out
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
    let (cfg, listens) = listener_per_backend(backends, "");
    let _w = Weir::start(&cfg, &listens);

    // Each backend has its own client, all three asking at once: load on the machine falls
    // on them alike, and one connection's wait does not space out another's requests (a
    // connection quiet for longer than the delayed-ACK time no longer holds ACKs back).
    let asked = listens.map(|l| tokio::spawn(median_get(l)));
    let [in_body, in_head, nodelay] = medians(asked).await;
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
    let _w = Weir::start(&one_pool(listen, &endpoints(&[(up, 1)]), ""), &[listen]);
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
    let [body_apart, in_head, continued, nodelay] = medians(asked).await;
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
    let [client_nagle, client_nodelay, upstream_tls, upstream_plain] = medians(asked).await;
    let margin = Duration::from_millis(20);
    assert!(
        client_nagle < client_nodelay + margin && upstream_tls < upstream_plain + margin,
        "median request over TLS with its body a record apart {client_nagle:?} (with \
         TCP_NODELAY {client_nodelay:?}); answer in two records from a TLS upstream with Nagle \
         on {upstream_tls:?} (in two pieces over plain TCP with TCP_NODELAY {upstream_plain:?})"
    );
}

/// A backend that answers while the request is still coming (full duplex), with Nagle on
/// unless `nodelay`: once a chunked request's first byte of data (`x`) is in, the head and
/// `a`; once the request has ended, `b` and `c` as two writes.
async fn duplex_backend(nodelay: bool) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            s.set_nodelay(nodelay).unwrap();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    // Hex sizes and CRLFs never hold an `x`; the body's last chunk ends it.
                    for (until, answer) in [
                        (
                            &b"x"[..],
                            &[&b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\na"[..]][..],
                        ),
                        (&b"0\r\n\r\n"[..], &[&b"b"[..], &b"c"[..]][..]),
                    ] {
                        while !buf.windows(until.len()).any(|w| w == until) {
                            match s.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        }
                        for piece in answer {
                            if s.write_all(piece).await.is_err() {
                                return;
                            }
                        }
                    }
                    buf.clear();
                }
            });
        }
    });
    addr
}

/// Reads from `conn` into `got` until it ends with `end`.
async fn read_until(conn: &mut TcpStream, got: &mut Vec<u8>, end: &[u8]) {
    let mut chunk = [0u8; 1024];
    while !got.ends_with(end) {
        let n = conn.read(&mut chunk).await.unwrap();
        assert!(n > 0, "weir closed: {:?}", String::from_utf8_lossy(got));
        got.extend_from_slice(&chunk[..n]);
    }
}

/// One full-duplex exchange on `conn`: the request's head and first chunk; once the answer's
/// head and first byte are back, the rest of the request, written as `rest`. How long the
/// rest of the answer took from there.
async fn timed_duplex(conn: &mut TcpStream, rest: &[&[u8]]) -> Duration {
    conn.write_all(
        b"POST / HTTP/1.1\r\nhost: acks\r\ntransfer-encoding: chunked\r\n\r\n1\r\nx\r\n",
    )
    .await
    .unwrap();
    let mut got = Vec::new();
    read_until(conn, &mut got, b"\r\n\r\na").await;
    let start = Instant::now();
    for piece in rest {
        conn.write_all(piece).await.unwrap();
    }
    read_until(conn, &mut got, b"abc").await;
    assert!(got.starts_with(b"HTTP/1.1 200 "), "{got:?}");
    start.elapsed()
}

/// The median time of [`timed_duplex`] exchanges on a new connection to `listen`, from a
/// client with Nagle on if `nagle` ([`median_after_three`]).
async fn median_duplex(
    listen: SocketAddr,
    nagle: bool,
    rest: &'static [&'static [u8]],
) -> Duration {
    let mut c = TcpStream::connect(listen).await.unwrap();
    c.set_nodelay(!nagle).unwrap();
    let mut times = Vec::new();
    for _ in 0..ROUNDS {
        let one = tokio::time::timeout(Duration::from_secs(30), timed_duplex(&mut c, rest));
        times.push(one.await.expect("a full-duplex exchange within 30 s"));
    }
    median_after_three(times)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_goes_on_after_weir_sent_more_of_the_request_is_not_held() {
    // weir acknowledges at once once per answer, and again after it sent more of the request
    // while the answer was coming: those bytes have the kernel hold its ACKs back anew. The
    // pools keep no body for replay (`buffer = 0`), so the request streams to the backend
    // as it comes instead of being read whole first.
    let (nagle, nodelay) = (duplex_backend(false).await, duplex_backend(true).await);
    let (cfg, listens) = listener_per_backend([nagle, nodelay], "retry = { buffer = 0 }");
    let _w = Weir::start(&cfg, &listens);
    let asked = listens.map(|l| tokio::spawn(median_duplex(l, false, &[b"1\r\ny\r\n0\r\n\r\n"])));
    let [with_nagle, with_nodelay] = medians(asked).await;
    assert!(
        with_nagle < with_nodelay + Duration::from_millis(20),
        "median rest of a full-duplex answer {with_nagle:?}, against {with_nodelay:?} from a \
         backend with TCP_NODELAY"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_goes_on_after_weir_sent_some_of_the_answer_is_not_held() {
    // The mirror of the test above: weir has sent the client the start of the answer while
    // the request's body is still coming, and the client writes the rest of it in two
    // pieces with Nagle on.
    let up = duplex_backend(true).await;
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up, 1)]), "retry = { buffer = 0 }"),
        &[listen],
    );
    let rest: &[&[u8]] = &[b"1\r\ny\r\n", b"0\r\n\r\n"];
    let asked = [true, false].map(|nagle| tokio::spawn(median_duplex(listen, nagle, rest)));
    let [with_nagle, with_nodelay] = medians(asked).await;
    assert!(
        with_nagle < with_nodelay + Duration::from_millis(20),
        "median rest of a full-duplex exchange from a client with Nagle on {with_nagle:?}, \
         against {with_nodelay:?} with TCP_NODELAY"
    );
}

/// The median time of POSTs over HTTP/2 (h2c) on a new connection to `listen`, from a client
/// with Nagle on if `nagle` that sends each request's HEADERS and, a moment later, its DATA
/// ([`median_after_three`]).
async fn median_h2_post(listen: SocketAddr, nagle: bool) -> Duration {
    let tcp = TcpStream::connect(listen).await.unwrap();
    tcp.set_nodelay(!nagle).unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut times = Vec::new();
    for _ in 0..ROUNDS {
        let mut c = client.clone().ready().await.unwrap();
        let start = Instant::now();
        let req = http::Request::post("http://acks/")
            .header("content-length", "1000")
            .body(())
            .unwrap();
        let (resp, mut body) = c.send_request(req, false).unwrap();
        // The HEADERS frame goes out on its own first.
        tokio::time::sleep(Duration::from_millis(2)).await;
        body.send_data(bytes::Bytes::from(vec![b'y'; 1000]), true)
            .unwrap();
        let resp = tokio::time::timeout(Duration::from_secs(30), resp)
            .await
            .expect("an answer within 30 s")
            .unwrap();
        assert_eq!(resp.status(), 200);
        let mut data = resp.into_body();
        while let Some(d) = data.data().await {
            let d = d.unwrap();
            data.flow_control().release_capacity(d.len()).unwrap();
        }
        times.push(start.elapsed());
    }
    median_after_three(times)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http2_request_whose_data_comes_after_its_headers_is_not_held() {
    let up = piecewise_backend(BODY, false).await;
    let listen = free_addr();
    let _w = Weir::start(&one_pool(listen, &endpoints(&[(up, 1)]), ""), &[listen]);
    let asked = [true, false].map(|nagle| tokio::spawn(median_h2_post(listen, nagle)));
    let [with_nagle, with_nodelay] = medians(asked).await;
    assert!(
        with_nagle < with_nodelay + Duration::from_millis(20),
        "median HTTP/2 POST from a client with Nagle on {with_nagle:?}, against \
         {with_nodelay:?} with TCP_NODELAY"
    );
}

/// Where an [`h2_backend`] pauses 2 ms (the work an answer takes) before going on.
#[derive(Clone, Copy)]
enum Pause {
    /// Between the answer's HEADERS and its DATA: the HEADERS frame goes out on its own.
    BeforeData,
    /// After reading the request body, whose window it gave back as it read (WINDOW_UPDATE
    /// frames, which then go out on their own), before the answer.
    BeforeAnswer,
}

/// An h2c backend (the `h2` crate's server) that reads each request's body and answers it
/// with its HEADERS and a `BODY`-byte DATA frame, pausing where `pause` says; with `nagle`
/// it leaves TCP_NODELAY off.
async fn h2_backend(nagle: bool, pause: Pause) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let moment = || tokio::time::sleep(Duration::from_millis(2));
    tokio::spawn(async move {
        while let Ok((tcp, _)) = l.accept().await {
            tcp.set_nodelay(!nagle).unwrap();
            tokio::spawn(async move {
                let Ok(mut conn) = h2::server::handshake(tcp).await else {
                    return;
                };
                while let Some(Ok((req, mut respond))) = conn.accept().await {
                    tokio::spawn(async move {
                        let mut body = req.into_body();
                        while let Some(Ok(d)) = body.data().await {
                            let _ = body.flow_control().release_capacity(d.len());
                        }
                        if let Pause::BeforeAnswer = pause {
                            moment().await;
                        }
                        let resp = http::Response::builder()
                            .header("content-length", BODY)
                            .body(())
                            .unwrap();
                        let Ok(mut send) = respond.send_response(resp, false) else {
                            return;
                        };
                        if let Pause::BeforeData = pause {
                            moment().await;
                        }
                        let _ = send.send_data(bytes::Bytes::from(vec![b'x'; BODY]), true);
                    });
                }
            });
        }
    });
    addr
}

/// A config with an h2c pool per backend of `pause` (Nagle on, then TCP_NODELAY), and weir
/// serving it: the listeners, in that order.
async fn h2_backends(pause: Pause) -> (Weir, [SocketAddr; 2]) {
    let backends = [
        h2_backend(true, pause).await,
        h2_backend(false, pause).await,
    ];
    let (cfg, listens) = listener_per_backend(backends, "protocol = \"h2c\"");
    (Weir::start(&cfg, &listens), listens)
}

/// An answer from an HTTP/2 backend whose DATA comes after its HEADERS: weir's upstream
/// connection acknowledges at once what came while a stream's answer is still coming.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http2_backends_answer_whose_data_comes_after_its_headers_is_not_held() {
    let (_w, listens) = h2_backends(Pause::BeforeData).await;
    let asked = listens.map(|l| tokio::spawn(median_get(l)));
    let [with_nagle, with_nodelay] = medians(asked).await;
    assert!(
        with_nagle < with_nodelay + Duration::from_millis(20),
        "median answer from an HTTP/2 backend with Nagle on {with_nagle:?}, against \
         {with_nodelay:?} with TCP_NODELAY"
    );
}

/// The median time of POSTs of 30 000 bytes on a new connection to `listen` from a client
/// with TCP_NODELAY ([`median_after_three`]).
async fn median_post(listen: SocketAddr) -> Duration {
    let mut c = TcpStream::connect(listen).await.unwrap();
    c.set_nodelay(true).unwrap();
    let req = format!(
        "POST / HTTP/1.1\r\nhost: acks\r\ncontent-length: 30000\r\n\r\n{}",
        "y".repeat(30_000)
    );
    let mut times = Vec::new();
    for _ in 0..ROUNDS {
        times.push(timed(&mut c, &[req.as_bytes()]).await);
    }
    median_after_three(times)
}

/// An HTTP/2 backend that gives a request body's window back before it answers: its
/// WINDOW_UPDATE is acknowledged at once, or a backend with Nagle on holds the answer's
/// HEADERS behind it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http2_backends_answer_after_its_window_updates_is_not_held() {
    let (_w, listens) = h2_backends(Pause::BeforeAnswer).await;
    let asked = listens.map(|l| tokio::spawn(median_post(l)));
    let [with_nagle, with_nodelay] = medians(asked).await;
    assert!(
        with_nagle < with_nodelay + Duration::from_millis(20),
        "median POST to an HTTP/2 backend with Nagle on {with_nagle:?}, against \
         {with_nodelay:?} with TCP_NODELAY"
    );
}
