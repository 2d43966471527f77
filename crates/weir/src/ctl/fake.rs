//! A scripted admin API for unit tests of what the real one cannot be made to do on cue
//! (a version going stale between a read and a write).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// One request as the fake saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub if_match: Option<String>,
    pub body: String,
}

/// An answer: status, ETag version, body.
pub type Answer = (u16, Option<u64>, String);

/// Serves `answer` (given the request and the requests before it) on a loopback port,
/// one connection per request, until the test ends. Returns the base URL and the log.
pub fn serve(
    answer: impl Fn(&Seen, &[Seen]) -> Answer + Send + 'static,
) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let log = Arc::new(Mutex::new(Vec::new()));
    let seen = log.clone();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut r = BufReader::new(conn.try_clone().unwrap());
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            let mut parts = line.split_whitespace();
            let method = parts.next().unwrap_or_default().to_owned();
            let path = parts.next().unwrap_or_default().to_owned();
            let (mut len, mut if_match) = (0, None);
            loop {
                let mut h = String::new();
                r.read_line(&mut h).unwrap();
                let h = h.trim_end();
                if h.is_empty() {
                    break;
                }
                let (k, v) = h.split_once(':').unwrap();
                match k.to_ascii_lowercase().as_str() {
                    "content-length" => len = v.trim().parse().unwrap(),
                    "if-match" => if_match = Some(v.trim().to_owned()),
                    _ => {}
                }
            }
            let mut body = vec![0; len];
            r.read_exact(&mut body).unwrap();
            let req = Seen {
                method,
                path,
                if_match,
                body: String::from_utf8(body).unwrap(),
            };
            let (status, etag, body) = answer(&req, &seen.lock().unwrap());
            seen.lock().unwrap().push(req);
            let etag = etag
                .map(|v| format!("etag: \"{v}\"\r\n"))
                .unwrap_or_default();
            let _ = write!(
                conn,
                "HTTP/1.1 {status} X\r\ncontent-length: {}\r\n{etag}connection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, log)
}
