//! PROXY protocol v2 TLVs kept: what a proxy in front put in its v2 header (an
//! authority, a unique id, a cloud's endpoint id, TLS details) goes on in the v2 headers
//! weir sends for that connection, tcp and http alike; CRC32C (it covered the header it
//! came in) and NOOP (padding) do not. Sent by hand here, and by HAProxy
//! (`proxy-v2-options unique-id`).

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::client_addr::{get, raw_from};
use crate::common::{free_addr, Weir};
use crate::proxy_protocol::{answer_ok, relayed_v2_header, Recorder};
use crate::proxy_protocol_interop::haproxy;

const AUTHORITY: u8 = 0x02;
const CRC32C: u8 = 0x03;
const NOOP: u8 = 0x04;
const UNIQUE_ID: u8 = 0x05;
/// AWS's type for a VPC endpoint id (PP2_TYPE_AWS).
const AWS: u8 = 0xEA;

/// A v2 PROXY header from `src` to `dst` (IPv4) with `tlvs`, by hand.
fn v2_with(src: SocketAddr, dst: SocketAddr, tlvs: &[(u8, &[u8])]) -> Vec<u8> {
    let (SocketAddr::V4(s), SocketAddr::V4(d)) = (src, dst) else {
        panic!("IPv4 here");
    };
    let mut body = Vec::new();
    body.extend_from_slice(&s.ip().octets());
    body.extend_from_slice(&d.ip().octets());
    body.extend_from_slice(&s.port().to_be_bytes());
    body.extend_from_slice(&d.port().to_be_bytes());
    for (kind, value) in tlvs {
        body.push(*kind);
        body.extend_from_slice(&(value.len() as u16).to_be_bytes());
        body.extend_from_slice(value);
    }
    let mut h = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    h.extend_from_slice(&[0x21, 0x11]);
    h.extend_from_slice(&(body.len() as u16).to_be_bytes());
    h.extend_from_slice(&body);
    h
}

/// The TLVs of a recorded v2 header over IPv4 (after its 12 address bytes).
fn tlvs_of(head: &[u8]) -> Vec<(u8, Vec<u8>)> {
    assert_eq!(
        (head[12], head[13]),
        (0x21, 0x11),
        "v2, TCP over IPv4: {head:?}"
    );
    let mut rest = &head[16 + 12..];
    let mut out = Vec::new();
    while !rest.is_empty() {
        let len = u16::from_be_bytes([rest[1], rest[2]]) as usize;
        out.push((rest[0], rest[3..3 + len].to_vec()));
        rest = &rest[3 + len..];
    }
    out
}

fn sent() -> Vec<(u8, &'static [u8])> {
    vec![
        (AUTHORITY, b"db.example.com"),
        (NOOP, b"xyz"),
        (UNIQUE_ID, b"req-42"),
        (CRC32C, &[1, 2, 3, 4]),
        (AWS, b"\x01vpce-0abc"),
    ]
}

fn kept() -> Vec<(u8, Vec<u8>)> {
    vec![
        (AUTHORITY, b"db.example.com".to_vec()),
        (UNIQUE_ID, b"req-42".to_vec()),
        (AWS, b"\x01vpce-0abc".to_vec()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tcp_listener_passes_v2_tlvs_on() {
    let src = "198.51.100.20:40000".parse().unwrap();
    let dst = "192.0.2.1:5432".parse().unwrap();
    let head = relayed_v2_header(&v2_with(src, dst, &sent())).await;
    assert_eq!(&head[16..20], &[198, 51, 100, 20]);
    assert_eq!(tlvs_of(&head), kept());
}

/// An http listener reading PROXY headers from `trusted`, to a pool sending v2 to `backend`.
fn http_config(listen: SocketAddr, trusted: &str, backend: SocketAddr) -> String {
    format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "app"
proxy_protocol = true
trusted_proxies = ["{trusted}"]

[pools.app]
send_proxy = "v2"
endpoints = [{{ addr = "{backend}" }}]
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_listener_passes_v2_tlvs_on_to_each_requests_connection() {
    let rec = Recorder::default();
    let backend = rec.clone().spawn(answer_ok).await;
    let listen = free_addr();
    let _w = Weir::start(&http_config(listen, "127.0.0.1", backend), &[listen]);
    let src = "203.0.113.9:50000".parse().unwrap();
    let dst = "192.0.2.1:80".parse().unwrap();
    let mut s = tokio::net::TcpStream::connect(listen).await.unwrap();
    let req = b"GET / HTTP/1.1\r\nHost: app\r\n\r\n".to_vec();
    // Two requests on the connection: each goes on a connection of its own, with the TLVs.
    s.write_all(&[v2_with(src, dst, &sent()), req.clone()].concat())
        .await
        .unwrap();
    let mut got = Vec::new();
    let mut b = [0u8; 1024];
    for answers in 1..=2 {
        while got.windows(2).filter(|w| w == b"ok").count() < answers {
            let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut b))
                .await
                .unwrap()
                .unwrap();
            assert!(n > 0, "{}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&b[..n]);
        }
        if answers == 1 {
            s.write_all(&req).await.unwrap();
        }
    }
    let heads = rec.wait(2).await;
    assert_eq!(heads.len(), 2);
    for h in &heads {
        assert_eq!(&h[16..20], &[203, 0, 113, 9]);
        assert_eq!(tlvs_of(h), kept());
    }
}

/// HAProxy in front (mode http, `send-proxy-v2` with its `unique-id` TLV) and a backend
/// behind weir reading weir's v2 header: HAProxy's id arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn haproxys_unique_id_tlv_reaches_the_backend() {
    let rec = Recorder::default();
    let backend = rec.clone().spawn(answer_ok).await;
    let (listen, front) = (free_addr(), free_addr());
    let _w = Weir::start(&http_config(listen, "127.0.0.3", backend), &[listen]);
    let dir = tempfile::tempdir().unwrap();
    let _h = haproxy(
        dir.path(),
        &format!(
            "global\n  maxconn 64\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n\
             frontend fe\n  bind {front}\n  unique-id-format trace-7f3a\n  default_backend be\n\
             backend be\n  server weir {listen} send-proxy-v2 proxy-v2-options unique-id source 127.0.0.3\n"
        ),
        front,
    );
    let r = raw_from("127.0.0.9", front, &get("/", "")).await;
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    let heads = rec.wait(1).await;
    assert_eq!(
        &heads[0][16..20],
        &[127, 0, 0, 9],
        "the client HAProxy named"
    );
    let tlvs = tlvs_of(&heads[0]);
    assert!(
        tlvs.contains(&(UNIQUE_ID, b"trace-7f3a".to_vec())),
        "{tlvs:?}"
    );
}

/// A forward_auth sub-request to a `send_proxy = "v2"` pool goes on the client's behalf: its
/// header carries the client's TLVs too (the auth service here answers 200 to everything).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forward_auth_sub_request_carries_the_clients_tlvs() {
    let rec = Recorder::default();
    let auth = rec.clone().spawn(answer_ok).await;
    let app = weir_testkit::HttpUpstream::spawn("app").await.unwrap();
    let listen = free_addr();
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "app"
proxy_protocol = true
trusted_proxies = ["127.0.0.1"]

[routes.all]
listener = "web"
pool = "app"
filters = ["fa"]

[pools.app]
endpoints = [{{ addr = "{}" }}]

[pools.auth]
send_proxy = "v2"
endpoints = [{{ addr = "{auth}" }}]

[filters.fa]
kind = "forward_auth"
pool = "auth"
path = "/verify"
"#,
        app.addr()
    );
    let _w = Weir::start(&cfg, &[listen]);
    let src = "203.0.113.9:50000".parse().unwrap();
    let dst = "192.0.2.1:80".parse().unwrap();
    let mut s = tokio::net::TcpStream::connect(listen).await.unwrap();
    s.write_all(&[v2_with(src, dst, &sent()), get("/", "")].concat())
        .await
        .unwrap();
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut got))
        .await
        .expect("an answer")
        .unwrap();
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert_eq!(
        app.requests(),
        1,
        "the request went on after the auth service's yes"
    );
    let heads = rec.wait(1).await;
    assert_eq!(&heads[0][16..20], &[203, 0, 113, 9]);
    assert_eq!(tlvs_of(&heads[0]), kept());
}
