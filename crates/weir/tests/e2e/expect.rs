//! `Expect: 100-continue` against a backend whose answer comes before it reads the body
//! (an echo streaming back, a server answering its head at once): weir asked the client
//! for the body when it began sending the request upstream, so the `100` goes out before
//! that answer. Sent after it, the `100` would be dropped (a final answer ends the interim
//! ones), and a client waiting for it would never send the body the backend waits for.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::common::{endpoints, free_addr, one_pool, Weir};

/// Requests made in each test: weir reads the backend's answer within the same poll that
/// asked the client for its body only when the answer is already there, which an answer
/// sent as the connection opens makes likely but not certain (it races weir's own reads).
const TRIES: usize = 20;

/// A backend that answers each connection at once, before reading a byte of it, then reads
/// the request whole and sends, as the answer's body, how many body bytes came (six
/// digits), and closes.
async fn answering_first() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let head = "HTTP/1.1 200 OK\r\ncontent-length: 6\r\nconnection: close\r\n\r\n";
                if s.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let mut buf = Vec::new();
                let mut b = [0u8; 16 * 1024];
                let end = loop {
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                    match s.read(&mut b).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&b[..n]),
                    }
                };
                let text = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                let length: usize = text
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse().unwrap());
                let mut got = buf.len() - end;
                while got < length {
                    match s.read(&mut b).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => got += n,
                    }
                }
                let _ = s.write_all(format!("{got:06}").as_bytes()).await;
                let _ = s.shutdown().await;
            });
        }
    });
    addr
}

fn start(backend: SocketAddr) -> (Weir, SocketAddr) {
    let listen = free_addr();
    // `buffer = 0`: the body streams upstream behind the head (a body read whole first
    // would be asked for before weir connects, far from the answer).
    let cfg = one_pool(
        listen,
        &endpoints(&[(backend, 1)]),
        "retry = { buffer = 0 }",
    );
    (Weir::start(&cfg, &[listen]), listen)
}

/// An HTTP/1.1 client gets its `100 Continue` before the answer, then sends the body, which
/// reaches the backend whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http1_a_backend_answering_first_still_gets_the_body_after_a_100() {
    let (_w, listen) = start(answering_first().await);
    let body = vec![b'x'; 5000];
    for i in 0..TRIES {
        let mut s = TcpStream::connect(listen).await.unwrap();
        s.write_all(
            b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n",
        )
        .await
        .unwrap();
        // What came before the body goes: the `100` and nothing else, however it is cut.
        let mut first = Vec::new();
        let mut b = [0u8; 1024];
        while !first.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = tokio::time::timeout(Duration::from_secs(20), s.read(&mut b))
                .await
                .unwrap_or_else(|_| panic!("request {i}: nothing came"))
                .unwrap();
            assert!(n > 0, "request {i}: closed before the 100");
            first.extend_from_slice(&b[..n]);
        }
        let first = String::from_utf8_lossy(&first).into_owned();
        assert!(
            first.starts_with("HTTP/1.1 100 Continue\r\n\r\n"),
            "request {i}: the answer came before the 100: {first:?}"
        );
        s.write_all(&body).await.unwrap();
        let mut rest = Vec::new();
        tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut rest))
            .await
            .unwrap_or_else(|_| panic!("request {i}: no answer"))
            .unwrap();
        let all = format!("{first}{}", String::from_utf8_lossy(&rest));
        assert!(all.contains("HTTP/1.1 200 OK"), "request {i}: {all}");
        assert!(all.ends_with("005000"), "request {i}: {all}");
    }
}

/// The same over HTTP/2: curl waits a minute for the `100` (so without it, it runs out of
/// its 20 s), and the backend gets the body whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_a_backend_answering_first_still_gets_the_body_after_a_100() {
    let (_w, listen) = start(answering_first().await);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("body");
    std::fs::write(&file, vec![b'x'; 200_000]).unwrap();
    let data = format!("@{}", file.display());
    for i in 0..TRIES {
        let out = std::process::Command::new("curl")
            .args(["-sS", "-v", "--max-time", "20", "--http2-prior-knowledge"])
            .args(["--expect100-timeout", "60", "-H", "Expect: 100-continue"])
            .args(["--data-binary", &data])
            .arg(format!("http://{listen}/up"))
            .output()
            .unwrap();
        let (body, verbose) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(verbose.contains("< HTTP/2 100"), "request {i}: {verbose}");
        assert!(verbose.contains("< HTTP/2 200"), "request {i}: {verbose}");
        assert_eq!(body, "200000", "request {i}: {verbose}");
    }
}
