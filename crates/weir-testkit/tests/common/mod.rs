//! Raw-socket helpers: some knobs (idle close, close-delimited bodies) are only visible
//! below an HTTP client library.
#![allow(dead_code)]

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub async fn send_get(s: &mut TcpStream, path: &str) {
    let req = format!("GET {path} HTTP/1.1\r\nhost: t\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
}

/// Reads one Content-Length-framed response; returns (head, body).
pub async fn read_response(s: &mut TcpStream) -> (String, Vec<u8>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = s.read(&mut chunk).await.unwrap();
        assert!(n > 0, "EOF before response head: {buf:?}");
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap())
        })
        .expect("content-length");
    while buf.len() < head_end + len {
        let n = s.read(&mut chunk).await.unwrap();
        assert!(n > 0, "EOF inside body");
        buf.extend_from_slice(&chunk[..n]);
    }
    (head, buf[head_end..head_end + len].to_vec())
}

/// Reads until the peer closes (EOF or reset) within `limit`; returns what arrived.
pub async fn read_until_closed(s: &mut TcpStream, limit: Duration) -> Vec<u8> {
    let mut out = Vec::new();
    let mut chunk = [0u8; 4096];
    tokio::time::timeout(limit, async {
        loop {
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => out.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await
    .expect("peer did not close the connection in time");
    out
}
