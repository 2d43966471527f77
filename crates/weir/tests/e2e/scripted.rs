//! A backend scripted byte by byte, for what a well-behaved server never
//! does: close after reading a request, answer a broken head, reset with the
//! request unread, cut a body short. It records the body of every request
//! its "application" read whole, so tests count deliveries at the backend.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What a scripted backend does with the `n`th request (from 0) it finds on
/// a connection.
#[derive(Clone, Copy, Debug)]
pub enum Act {
    /// Reads it whole and answers 200 (keep-alive).
    Answer,
    /// Reads it whole, then closes without a byte of answer (FIN).
    ReadAndClose,
    /// Reads it whole and answers a head that cannot be parsed.
    Malformed,
    /// Waits until it has arrived, then closes without reading it: the
    /// kernel answers with a reset.
    CloseUnread,
    /// Reads it whole, answers a head announcing 100 bytes, sends 10 of
    /// them and resets the connection.
    CutBody,
}

/// A backend whose connections follow `script` (by request index on the
/// connection; past its end: `Answer`) and which records the body of every
/// request it read whole.
pub struct Scripted {
    pub addr: SocketAddr,
    read: Arc<Mutex<Vec<String>>>,
}

impl Scripted {
    pub async fn spawn(script: &'static [Act]) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let read = Arc::new(Mutex::new(Vec::new()));
        let log = read.clone();
        tokio::spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                tokio::spawn(serve(s, script, log.clone()));
            }
        });
        Scripted { addr, read }
    }

    pub fn bodies(&self) -> Vec<String> {
        self.read.lock().unwrap().clone()
    }
}

async fn serve(mut s: TcpStream, script: &'static [Act], log: Arc<Mutex<Vec<String>>>) {
    let mut buf = Vec::new();
    for n in 0.. {
        let act = script.get(n).copied().unwrap_or(Act::Answer);
        if let Act::CloseUnread = act {
            // Dropped with the request in its receive queue: a reset.
            let _ = s.readable().await;
            return;
        }
        let Some(body) = read_request(&mut s, &mut buf).await else {
            return;
        };
        log.lock().unwrap().push(body);
        let answer: &[u8] = match act {
            Act::Answer => b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n",
            Act::Malformed => b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\nok\n",
            Act::CutBody => {
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
                    .await;
                // Linger 0: close with a reset, as a crashing process's kernel may.
                let _ = socket2::SockRef::from(&s).set_linger(Some(std::time::Duration::ZERO));
                return;
            }
            Act::ReadAndClose | Act::CloseUnread => return,
        };
        if s.write_all(answer).await.is_err() {
            return;
        }
    }
}

/// One request (head and Content-Length body) from `s`; its body as text.
async fn read_request(s: &mut TcpStream, buf: &mut Vec<u8>) -> Option<String> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            let start = end + 4;
            while buf.len() < start + len {
                let mut chunk = [0u8; 4096];
                let n = s.read(&mut chunk).await.ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            let body = String::from_utf8_lossy(&buf[start..start + len]).into_owned();
            buf.drain(..start + len);
            return Some(body);
        }
        let mut chunk = [0u8; 4096];
        let n = s.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}
