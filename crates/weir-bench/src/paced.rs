//! `weir-bench paced`: keep-alive HTTP/1.1 clients at a controlled pace that
//! count every failure, for the capacity and resilience scenarios of `bench/`.
//!
//! A deliberately small HTTP/1.1 client: one request at a time per
//! connection, Content-Length / chunked / close-delimited response bodies.
//! Every request is classified: ok (2xx, and with `--check-echo` the body is
//! the request body), a status failure (`status 502 upstream_reset`, with
//! weir's `x-weir-reason` when present), or a transport failure (connect
//! refused, reset, connection closed before the answer, timeout, ...).

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub struct Opts {
    pub connect: SocketAddr,
    pub clients: usize,
    pub method: String,
    pub path: String,
    pub body_size: usize,
    pub pace: (u64, u64),
    pub duration: Duration,
    pub timeout: Duration,
    pub check_echo: bool,
    pub fail_pause: Duration,
    pub threads: usize,
}

const MAX_SAMPLES: usize = 12;

#[derive(Default)]
struct Stats {
    ok: u64,
    failed: u64,
    connects: u64,
    kinds: BTreeMap<String, u64>,
    samples: Vec<(Duration, String)>,
    lat_us: Vec<u32>,
}

impl Stats {
    fn fail(&mut self, kind: String, at: Duration, client: usize) {
        self.failed += 1;
        if self.samples.len() < MAX_SAMPLES {
            let what = format!("t={:.3}s client {client}: {kind}", at.as_secs_f64());
            self.samples.push((at, what));
        }
        *self.kinds.entry(kind).or_default() += 1;
    }

    fn merge(&mut self, mut o: Stats) {
        self.ok += o.ok;
        self.failed += o.failed;
        self.connects += o.connects;
        for (k, v) in o.kinds {
            *self.kinds.entry(k).or_default() += v;
        }
        // keep the earliest samples of all clients
        self.samples.append(&mut o.samples);
        self.samples.sort_by_key(|s| s.0);
        self.samples.truncate(MAX_SAMPLES);
        self.lat_us.append(&mut o.lat_us);
    }
}

/// A tiny xorshift generator: jitter without another dependency.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
        Rng((t ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in lo..=hi.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// Why an exchange failed (the connection is dropped after any of these).
struct Fail(String);

fn io_kind(stage: &str, e: &io::Error) -> Fail {
    let k = match e.kind() {
        io::ErrorKind::ConnectionRefused => "refused".to_string(),
        io::ErrorKind::ConnectionReset => "reset".to_string(),
        io::ErrorKind::BrokenPipe => "broken pipe".to_string(),
        io::ErrorKind::ConnectionAborted => "aborted".to_string(),
        io::ErrorKind::UnexpectedEof => "closed".to_string(),
        _ => e.to_string(),
    };
    Fail(format!("{stage}: {k}"))
}

struct Resp {
    status: u16,
    reason: Option<String>,
    body: Vec<u8>,
    close: bool,
}

struct PacedConn {
    s: TcpStream,
    buf: Vec<u8>,
}

impl PacedConn {
    /// Reads more bytes into `buf`; Ok(0) at EOF.
    async fn fill(&mut self) -> io::Result<usize> {
        let mut tmp = [0u8; 16 * 1024];
        let n = self.s.read(&mut tmp).await?;
        self.buf.extend_from_slice(&tmp[..n]);
        Ok(n)
    }

    /// Takes exactly `n` bytes off the front of the buffer, reading as needed.
    async fn take(&mut self, n: usize) -> Result<Vec<u8>, Fail> {
        while self.buf.len() < n {
            match self.fill().await {
                Ok(0) => return Err(Fail("response body: closed early".into())),
                Ok(_) => {}
                Err(e) => return Err(io_kind("response body", &e)),
            }
        }
        let rest = self.buf.split_off(n);
        Ok(std::mem::replace(&mut self.buf, rest))
    }

    /// One CRLF-terminated line (without the CRLF).
    async fn line(&mut self) -> Result<Vec<u8>, Fail> {
        loop {
            if let Some(i) = find(&self.buf, b"\r\n") {
                let l = self.take(i + 2).await?;
                return Ok(l[..i].to_vec());
            }
            if self.buf.len() > 64 * 1024 {
                return Err(Fail("bad response: line too long".into()));
            }
            match self.fill().await {
                Ok(0) => return Err(Fail("response body: closed early".into())),
                Ok(_) => {}
                Err(e) => return Err(io_kind("response body", &e)),
            }
        }
    }

    async fn exchange(&mut self, req: &[u8], head_only: bool) -> Result<Resp, Fail> {
        if let Err(e) = self.s.write_all(req).await {
            return Err(io_kind("write", &e));
        }
        loop {
            // the response head
            let end = loop {
                if let Some(i) = find(&self.buf, b"\r\n\r\n") {
                    break i;
                }
                if self.buf.len() > 64 * 1024 {
                    return Err(Fail("bad response: head too long".into()));
                }
                let empty = self.buf.is_empty();
                match self.fill().await {
                    Ok(0) if empty => return Err(Fail("closed before any response byte".into())),
                    Ok(0) => return Err(Fail("closed in the response head".into())),
                    Ok(_) => {}
                    Err(e) if empty => return Err(io_kind("before any response byte", &e)),
                    Err(e) => return Err(io_kind("in the response head", &e)),
                }
            };
            let head = self.take(end + 4).await?;
            let head = String::from_utf8_lossy(&head[..end]).into_owned();
            let mut lines = head.split("\r\n");
            let status_line = lines.next().unwrap_or("");
            let mut parts = status_line.split_whitespace();
            let version = parts.next().unwrap_or("");
            let status: u16 = match parts.next().and_then(|s| s.parse().ok()) {
                Some(s) if version.starts_with("HTTP/1.") => s,
                _ => return Err(Fail(format!("bad status line {status_line:?}"))),
            };
            let (mut len, mut chunked, mut close, mut reason) =
                (None::<usize>, false, version == "HTTP/1.0", None);
            for l in lines {
                let Some((k, v)) = l.split_once(':') else {
                    continue;
                };
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
                match k.as_str() {
                    "content-length" => len = v.parse().ok(),
                    "transfer-encoding" => chunked = v.to_ascii_lowercase().contains("chunked"),
                    "connection" => {
                        let v = v.to_ascii_lowercase();
                        if v.contains("close") {
                            close = true;
                        } else if v.contains("keep-alive") {
                            close = false;
                        }
                    }
                    "x-weir-reason" => reason = Some(v.to_string()),
                    _ => {}
                }
            }
            if (100..200).contains(&status) {
                continue; // 100 Continue and friends: the real answer follows
            }
            let body = if head_only || status == 204 || status == 304 {
                Vec::new()
            } else if chunked {
                let mut body = Vec::new();
                loop {
                    let l = self.line().await?;
                    let l = String::from_utf8_lossy(&l);
                    let size = l.split(';').next().unwrap_or("").trim();
                    let n = usize::from_str_radix(size, 16)
                        .map_err(|_| Fail(format!("bad chunk size {size:?}")))?;
                    if n == 0 {
                        while !self.line().await?.is_empty() {} // trailers
                        break;
                    }
                    body.extend(self.take(n).await?);
                    self.take(2).await?;
                }
                body
            } else if let Some(n) = len {
                self.take(n).await?
            } else {
                // close-delimited
                loop {
                    match self.fill().await {
                        Ok(0) => break,
                        Ok(_) => {}
                        Err(e) => return Err(io_kind("response body", &e)),
                    }
                }
                close = true;
                std::mem::take(&mut self.buf)
            };
            return Ok(Resp {
                status,
                reason,
                body,
                close,
            });
        }
    }
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

/// This process's id and start time: distinct for every run of weir-bench.
fn run_id() -> &'static str {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros());
        format!("{}.{t}", std::process::id())
    })
}

fn request(o: &Opts, client: usize, n: u64) -> (Vec<u8>, Vec<u8>) {
    let mut body = Vec::new();
    if o.body_size > 0 {
        body = format!("client {client} request {n} ").into_bytes();
        body.resize(o.body_size, b'x');
    }
    // A request id unique across runs, so backends can count a request
    // that reached them twice (fake-upstream's `/__ids`).
    let mut req = format!(
        "{} {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: weir-bench\r\nX-Request-Id: {}-{client}-{n}\r\n",
        o.method,
        o.path,
        o.connect,
        run_id()
    );
    if o.body_size > 0 || !matches!(o.method.as_str(), "GET" | "HEAD" | "DELETE" | "OPTIONS") {
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    let mut req = req.into_bytes();
    req.extend_from_slice(&body);
    (req, body)
}

async fn client(o: &Opts, id: usize, start: Instant, deadline: Instant) -> Stats {
    let mut st = Stats::default();
    let mut rng = Rng::new(id as u64 + 1);
    let (lo, hi) = o.pace;
    let head_only = o.method == "HEAD";
    let mut conn: Option<PacedConn> = None;
    // Spread the clients' first requests over one pace interval.
    if hi > 0 {
        tokio::time::sleep(Duration::from_millis(rng.range(0, hi))).await;
    }
    let mut n = 0u64;
    while Instant::now() < deadline {
        n += 1;
        let t0 = Instant::now();
        let (req, body) = request(o, id, n);
        let fresh = conn.is_none();
        let res = tokio::time::timeout(o.timeout, async {
            if conn.is_none() {
                st.connects += 1;
                let s = TcpStream::connect(o.connect)
                    .await
                    .map_err(|e| io_kind("connect", &e))?;
                let _ = s.set_nodelay(true);
                conn = Some(PacedConn { s, buf: Vec::new() });
            }
            conn.as_mut().unwrap().exchange(&req, head_only).await
        })
        .await;
        let at = t0.duration_since(start);
        let failed_before = st.failed;
        match res {
            Err(_) => {
                conn = None;
                st.fail(format!("timeout after {:?}", o.timeout), at, id);
            }
            Ok(Err(Fail(why))) => {
                conn = None;
                let on = if fresh { "new" } else { "reused" };
                let refused = why.starts_with("connect");
                st.fail(format!("{why} (on a {on} client connection)"), at, id);
                if refused && o.fail_pause.is_zero() {
                    // do not spin on a proxy that refuses connections
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
            Ok(Ok(r)) => {
                if (200..300).contains(&r.status) && (!o.check_echo || r.body == body) {
                    st.ok += 1;
                    st.lat_us
                        .push(t0.elapsed().as_micros().min(u32::MAX as u128) as u32);
                } else if (200..300).contains(&r.status) {
                    st.fail(
                        format!("status {} with a wrong echo body", r.status),
                        at,
                        id,
                    );
                } else {
                    let reason = r.reason.map(|x| format!(" {x}")).unwrap_or_default();
                    st.fail(format!("status {}{reason}", r.status), at, id);
                }
                if r.close {
                    conn = None;
                }
            }
        }
        if st.failed > failed_before && !o.fail_pause.is_zero() {
            tokio::time::sleep(
                o.fail_pause
                    .min(deadline.saturating_duration_since(Instant::now())),
            )
            .await;
        }
        if hi > 0 {
            let next = t0 + Duration::from_millis(rng.range(lo, hi));
            tokio::time::sleep_until(next.min(deadline).into()).await;
        }
    }
    st
}

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

pub fn run(o: Opts) -> super::Res {
    let rt = if o.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(o.threads)
            .enable_all()
            .build()?
    };
    let o = std::sync::Arc::new(o);
    let (stats, secs) = rt.block_on({
        let o = o.clone();
        async move {
            let start = Instant::now();
            let deadline = start + o.duration;
            let tasks: Vec<_> = (0..o.clients.max(1))
                .map(|i| {
                    let o = o.clone();
                    tokio::spawn(async move { client(&o, i, start, deadline).await })
                })
                .collect();
            let mut all = Stats::default();
            for t in tasks {
                if let Ok(st) = t.await {
                    all.merge(st);
                }
            }
            (all, start.elapsed().as_secs_f64())
        }
    });
    let mut lat = stats.lat_us;
    lat.sort_unstable();
    let pct = |p: f64| -> u32 {
        if lat.is_empty() {
            return 0;
        }
        let i = ((p / 100.0) * (lat.len() - 1) as f64).round() as usize;
        lat[i.min(lat.len() - 1)]
    };
    let kinds = stats
        .kinds
        .iter()
        .map(|(k, v)| format!("{}:{v}", esc(k)))
        .collect::<Vec<_>>()
        .join(",");
    let samples = stats
        .samples
        .iter()
        .map(|s| esc(&s.1))
        .collect::<Vec<_>>()
        .join(",");
    println!(
        "{{\"ok\":{},\"failed\":{},\"requests\":{},\"connects\":{},\"seconds\":{secs:.6},\"ok_per_s\":{:.1},\
         \"p50_us\":{},\"p90_us\":{},\"p99_us\":{},\"max_us\":{},\"kinds\":{{{kinds}}},\"samples\":[{samples}]}}",
        stats.ok,
        stats.failed,
        stats.ok + stats.failed,
        stats.connects,
        stats.ok as f64 / secs,
        pct(50.0),
        pct(90.0),
        pct(99.0),
        lat.last().copied().unwrap_or(0),
    );
    Ok(())
}
