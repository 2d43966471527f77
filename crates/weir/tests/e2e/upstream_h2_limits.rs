//! An h2c backend that breaks HTTP/2's rules in its responses: an HPACK bomb (a
//! 4000-byte table entry, then 130 000 one-byte references to it), and a field HTTP/2
//! forbids. weir resets each such stream and answers 502, keeps its memory, and keeps the
//! connection: the next request on it is served, which also shows that weir's HPACK table
//! followed the bomb's block it did not keep. The backend is made of weir-h2's frames and
//! HPACK decoder, since no server library sends such responses. The same backend answers a
//! HEAD as HTTP/2 allows: its content-length, and no DATA.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::Request;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use weir_h2::frame::{self, write, Frame, DEFAULT_MAX_FRAME, PREFACE};
use weir_h2::hpack::{encode, Decoder};

use crate::common::{free_addr, one_pool, rss_kib, Weir};
use crate::tls_kit::metric;

/// The backend: counts the connections it accepted.
async fn rule_breaking_backend() -> (SocketAddr, Arc<AtomicU64>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let accepted = Arc::new(AtomicU64::new(0));
    let counted = accepted.clone();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = l.accept().await.unwrap();
            counted.fetch_add(1, Relaxed);
            tokio::spawn(serve(tcp));
        }
    });
    (addr, accepted)
}

async fn serve(mut tcp: TcpStream) {
    let mut buf = BytesMut::new();
    while buf.len() < PREFACE.len() {
        if tcp.read_buf(&mut buf).await.unwrap_or(0) == 0 {
            return;
        }
    }
    assert_eq!(&buf[..PREFACE.len()], PREFACE);
    let _ = buf.split_to(PREFACE.len());
    let mut out = Vec::new();
    write::settings(&mut out, &[]);
    let mut hpack = Decoder::new(4096);
    loop {
        while let Some(f) = frame::read(&mut buf, DEFAULT_MAX_FRAME).unwrap() {
            match f {
                Frame::Settings(_) => write::settings_ack(&mut out),
                Frame::Headers {
                    stream,
                    block,
                    end_headers: true,
                    ..
                } => {
                    let mut path = Vec::new();
                    hpack
                        .decode(&block, |n, v, _| {
                            if n == b":path" {
                                path = v.to_vec();
                            }
                        })
                        .unwrap();
                    answer(&mut out, stream, &path);
                }
                _ => {}
            }
        }
        if !out.is_empty() {
            if tcp.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
        if tcp.read_buf(&mut buf).await.unwrap_or(0) == 0 {
            return;
        }
    }
}

fn answer(out: &mut Vec<u8>, stream: u32, path: &[u8]) {
    let mut block = vec![0x88]; // :status 200
    match path {
        b"/bomb" => {
            // x: 4000 bytes, indexed (4000 = 127 + 3873 as an HPACK integer), then
            // index 62 (that entry) over and over: 520 MB of fields from 134 KB.
            block.extend_from_slice(&[0x40, 0x01, b'x', 0x7f, 0xa1, 0x1e]);
            block.extend(std::iter::repeat_n(b'v', 4000));
            block.extend(std::iter::repeat_n(0xbe, 130_000));
            write::headers(out, stream, &block, true, DEFAULT_MAX_FRAME);
        }
        b"/head-length" => {
            // A HEAD answer: its length, no DATA, END_STREAM on the HEADERS (as Go's
            // servers answer).
            encode::field(&mut block, b"content-length", b"1000", false);
            write::headers(out, stream, &block, true, DEFAULT_MAX_FRAME);
        }
        b"/forbidden-field" => {
            encode::field(&mut block, b"connection", b"close", false);
            write::headers(out, stream, &block, true, DEFAULT_MAX_FRAME);
        }
        _ => {
            write::headers(out, stream, &block, false, DEFAULT_MAX_FRAME);
            write::data(out, stream, b"ok\n", true);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_breaking_http2_rules_gets_its_stream_reset_and_weir_stays_small() {
    let (addr, accepted) = rule_breaking_backend().await;
    let listen = free_addr();
    let eps = format!("endpoints = [{{ addr = \"{addr}\" }}]");
    // No retries: every request goes on the one connection (a retry would open another).
    let pool = "protocol = \"h2c\"\n[pools.app.retry]\nattempts = 0";
    let w = Weir::start(&one_pool(listen, &eps, pool), &[listen]);
    let pid = w.child.id();
    let mut conn = weir_testkit::client::HttpConn::connect(listen)
        .await
        .unwrap();
    let mut get = async |path: &str| {
        let req = Request::get(format!("http://{listen}{path}"))
            .body(http_body_util::Full::new(Bytes::new()))
            .unwrap();
        let r = conn.send(req).await.unwrap();
        (r.status.as_u16(), r.text())
    };
    assert_eq!(get("/first").await, (200, "ok\n".to_owned()));
    let before = rss_kib(pid);
    let (status, _) = get("/bomb").await;
    assert_eq!(status, 502);
    let grew = rss_kib(pid).saturating_sub(before);
    assert!(grew < 64 * 1024, "weir grew {grew} KiB");
    let (status, _) = get("/forbidden-field").await;
    assert_eq!(status, 502);
    // Served on the same connection: stream errors leave it up, and its HPACK table
    // (which the bomb's block added an entry to) still agrees with the backend's.
    assert_eq!(get("/after").await, (200, "ok\n".to_owned()));
    assert_eq!(accepted.load(Relaxed), 1);
    let reset = metric(
        w.admin,
        &format!(
            "weir_requests_total{{listener=\"web\",route=\"\",pool=\"app\",endpoint=\"{addr}\",code=\"502\",reason=\"upstream_reset\"}}"
        ),
    )
    .await;
    assert_eq!(reset, 2.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_answer_saying_its_length_without_data_passes() {
    let (addr, _) = rule_breaking_backend().await;
    let listen = free_addr();
    let eps = format!("endpoints = [{{ addr = \"{addr}\" }}]");
    let _w = Weir::start(&one_pool(listen, &eps, "protocol = \"h2c\""), &[listen]);
    let mut conn = weir_testkit::client::HttpConn::connect(listen)
        .await
        .unwrap();
    let req = Request::head(format!("http://{listen}/head-length"))
        .body(http_body_util::Full::new(Bytes::new()))
        .unwrap();
    let r = conn.send(req).await.unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-length"], "1000");
}
