//! An HTTP/2 endpoint's GOAWAY whose last stream id is below a stream weir opened on its
//! connection: RFC 9113 §6.8 says such a stream was not processed and may go again, so weir
//! retries it on a new connection whatever its method, and the client gets one answer from one processing.
//!
//! No server library sends such a GOAWAY on purpose (they set the last id to the highest
//! stream they read), so the endpoint's first connection speaks HTTP/2 frames by hand: it
//! reads the preface and frames until the request's HEADERS, then says GOAWAY with last
//! stream id 0. Its later connections are the `h2` crate's server.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use weir_testkit::client::HttpConn;

use crate::common::{free_addr, one_pool, Weir};
use crate::tls_kit::metric;

/// The endpoint: (address, connections accepted, requests answered). Its first connection
/// refuses the first stream it is sent with GOAWAY(last stream 0); the others answer each
/// request `done` once its body is read.
async fn endpoint() -> (SocketAddr, Arc<AtomicU64>, Arc<AtomicU64>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let conns = Arc::new(AtomicU64::new(0));
    let answered = Arc::new(AtomicU64::new(0));
    let (c, a) = (conns.clone(), answered.clone());
    tokio::spawn(async move {
        loop {
            let (tcp, _) = l.accept().await.unwrap();
            match c.fetch_add(1, Relaxed) {
                0 => tokio::spawn(go_away_before_processing(tcp)),
                _ => tokio::spawn(answer(tcp, a.clone())),
            };
        }
    });
    (addr, conns, answered)
}

/// One HTTP/2 frame head (RFC 9113 §4.1) and its payload.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_be_bytes();
    let mut f = vec![len[1], len[2], len[3], kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

const SETTINGS: u8 = 0x4;
const HEADERS: u8 = 0x1;
const GOAWAY: u8 = 0x7;
const ACK: u8 = 0x1;

async fn go_away_before_processing(mut tcp: TcpStream) {
    let mut preface = [0u8; 24];
    if tcp.read_exact(&mut preface).await.is_err() {
        return;
    }
    assert_eq!(&preface, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    tcp.write_all(&frame(SETTINGS, 0, 0, &[])).await.unwrap();
    loop {
        let mut head = [0u8; 9];
        if tcp.read_exact(&mut head).await.is_err() {
            return;
        }
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let mut payload = vec![0; len];
        if tcp.read_exact(&mut payload).await.is_err() {
            return;
        }
        match head[3] {
            SETTINGS if head[4] & ACK == 0 => {
                tcp.write_all(&frame(SETTINGS, ACK, 0, &[])).await.unwrap();
            }
            HEADERS => {
                let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]);
                assert!(stream >= 1, "HEADERS on stream 0");
                // Last stream id 0, NO_ERROR: no stream of this connection was processed.
                let goaway = [0u8; 8];
                tcp.write_all(&frame(GOAWAY, 0, 0, &goaway)).await.unwrap();
                break;
            }
            _ => {}
        }
    }
    // Whatever weir still writes is read and dropped until it closes the connection.
    let mut sink = [0u8; 4096];
    while matches!(tcp.read(&mut sink).await, Ok(n) if n > 0) {}
}

async fn answer(tcp: TcpStream, answered: Arc<AtomicU64>) {
    let Ok(mut conn) = h2::server::handshake(tcp).await else {
        return;
    };
    while let Some(Ok((req, mut respond))) = conn.accept().await {
        let answered = answered.clone();
        tokio::spawn(async move {
            let mut body = req.into_body();
            let mut got = Vec::new();
            while let Some(Ok(d)) = body.data().await {
                let _ = body.flow_control().release_capacity(d.len());
                got.extend_from_slice(&d);
            }
            answered.fetch_add(1, Relaxed);
            let resp = http::Response::builder().status(200).body(()).unwrap();
            let mut send = respond.send_response(resp, false).unwrap();
            let said = format!("done {}\n", String::from_utf8_lossy(&got));
            let _ = send.send_data(Bytes::from(said), true);
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_above_a_goaways_last_id_is_retried_even_for_a_post() {
    let (addr, conns, answered) = endpoint().await;
    let listen = free_addr();
    let eps = format!("endpoints = [{{ addr = \"{addr}\" }}]");
    let w = Weir::start(&one_pool(listen, &eps, "protocol = \"h2c\""), &[listen]);
    let req = Request::post(format!("http://{listen}/orders"))
        .body(Full::new(Bytes::from_static(b"{\"qty\":1}")))
        .unwrap();
    let mut conn = HttpConn::connect(listen).await.unwrap();
    let r = conn.send(req).await.unwrap();
    // The body went again, whole, on the second connection; processed once.
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text(), "done {\"qty\":1}\n");
    assert_eq!(answered.load(Relaxed), 1);
    assert_eq!(conns.load(Relaxed), 2);
    let retried = metric(
        w.admin,
        "weir_retries_total{pool=\"app\",reason=\"upstream_reset\"}",
    )
    .await;
    assert_eq!(retried, 1.0);
    // The connection that went away is not used again: the next POST goes on the second.
    let req = Request::post(format!("http://{listen}/orders"))
        .body(Full::new(Bytes::from_static(b"{\"qty\":2}")))
        .unwrap();
    let r = conn.send(req).await.unwrap();
    assert_eq!(
        (r.status.as_u16(), r.text()),
        (200, "done {\"qty\":2}\n".into())
    );
    assert_eq!(conns.load(Relaxed), 2);
}
