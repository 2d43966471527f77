//! `weir-bench https`: HTTPS load over TLS 1.3 with rustls, for bench/'s tls
//! connection-per-request scenarios. wrk cannot do them: with `Connection:
//! close` it resumes every session (it keeps its `SSL` object, and with it
//! the session, across reconnects), so it never measures a full handshake.
//!
//! Three modes, CONCURRENCY loops each:
//! - keep-alive: one TLS connection per loop, GET after GET (reconnects if closed);
//! - close (default): connect, full handshake, one `Connection: close` GET,
//!   read to the server's close; no session cache, so no handshake can resume;
//! - close + `--resume`: the same with a session cache per loop (TLS 1.3 tickets).
//!
//! Every handshake is classified by what the server agreed to (full, resumed,
//! full after a HelloRetryRequest), so the output proves whether resumption
//! happened. The client offers TLS 1.3 only, ring's key exchange groups (X25519
//! first: no post-quantum hybrid, which only one of the servers would accept),
//! and skips certificate checks: its own CPU is not measured, but it shares a
//! CPU with the upstreams and should not be the bottleneck.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, HandshakeKind, SignatureScheme};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

pub struct Opts {
    pub connect: SocketAddr,
    pub server_name: String,
    pub path: String,
    pub concurrency: usize,
    pub duration: Duration,
    pub keep_alive: bool,
    pub resume: bool,
    pub timeout: Duration,
    pub threads: usize,
}

/// Accepts any certificate: the benchmark's self-signed one is generated per run.
#[derive(Debug)]
struct NoVerify(Vec<SignatureScheme>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }
    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.clone()
    }
}

/// No session cache: see `loop_config` for --resume.
fn client_config() -> Result<ClientConfig, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let schemes = provider
        .signature_verification_algorithms
        .supported_schemes();
    let mut cfg = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(NoVerify(schemes)))
        .with_no_client_auth();
    cfg.resumption = Resumption::disabled();
    Ok(cfg)
}

/// With --resume, each loop gets its own session cache, as each browser has: its
/// next connection resumes with a ticket from its previous one. (One cache for
/// all loops keeps at most 8 tickets per server, so the surplus of the 50 first
/// full handshakes is dropped, and with a server that sends one ticket per
/// resumption the loops then starve each other: 55-99 % resumed from run to run.)
fn loop_config(base: &Arc<ClientConfig>, resume: bool) -> Arc<ClientConfig> {
    if !resume {
        return base.clone();
    }
    let mut cfg = ClientConfig::clone(base);
    cfg.resumption = Resumption::in_memory_sessions(16);
    Arc::new(cfg)
}

#[derive(Default)]
struct Stats {
    requests: u64,
    errors: u64,
    first_error: Option<String>,
    handshakes: BTreeMap<String, u64>,
    suites: BTreeMap<String, u64>,
    lat_us: Vec<u32>,
}

impl Stats {
    fn error(&mut self, e: String) {
        self.errors += 1;
        self.first_error.get_or_insert(e);
    }

    fn merge(&mut self, mut o: Stats) {
        self.requests += o.requests;
        self.errors += o.errors;
        if self.first_error.is_none() {
            self.first_error = o.first_error.take();
        }
        for (k, v) in o.handshakes {
            *self.handshakes.entry(k).or_default() += v;
        }
        for (k, v) in o.suites {
            *self.suites.entry(k).or_default() += v;
        }
        self.lat_us.append(&mut o.lat_us);
    }
}

async fn handshake(
    tls: &TlsConnector,
    o: &Opts,
    name: &ServerName<'static>,
    st: &mut Stats,
) -> io::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(o.connect).await?;
    tcp.set_nodelay(true)?;
    let s = tls.connect(name.clone(), tcp).await?;
    let conn = s.get_ref().1;
    let kind = match conn.handshake_kind() {
        Some(HandshakeKind::Full) => "full",
        Some(HandshakeKind::Resumed) => "resumed",
        Some(HandshakeKind::FullWithHelloRetryRequest) => "full_hrr",
        None => "?",
    };
    *st.handshakes.entry(kind.to_string()).or_default() += 1;
    let suite = format!(
        "{:?} {:?}",
        conn.negotiated_cipher_suite().map(|s| s.suite()),
        conn.negotiated_key_exchange_group().map(|g| g.name())
    )
    .replace("Some(", "")
    .replace(')', "");
    *st.suites.entry(suite).or_default() += 1;
    Ok(s)
}

/// Reads one response (status line, headers, Content-Length body) and returns
/// the status; `buf` keeps whatever followed it.
async fn response(s: &mut TlsStream<TcpStream>, buf: &mut Vec<u8>) -> io::Result<u16> {
    let bad = |m: &str| io::Error::new(io::ErrorKind::InvalidData, m.to_string());
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > 64 * 1024 {
            return Err(bad("response head over 64 KiB"));
        }
        read_more(s, buf).await?;
    };
    let head = std::str::from_utf8(&buf[..head_end]).map_err(|_| bad("non-UTF-8 head"))?;
    let status: u16 = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| bad("no status line"))?;
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .ok_or_else(|| bad("no Content-Length"))?;
    while buf.len() < head_end + len {
        read_more(s, buf).await?;
    }
    buf.drain(..head_end + len);
    Ok(status)
}

async fn read_more(s: &mut TlsStream<TcpStream>, buf: &mut Vec<u8>) -> io::Result<()> {
    let mut chunk = [0u8; 16 * 1024];
    let n = s.read(&mut chunk).await?;
    if n == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "closed before the end of the response",
        ));
    }
    buf.extend_from_slice(&chunk[..n]);
    Ok(())
}

async fn one_close(
    tls: &TlsConnector,
    o: &Opts,
    name: &ServerName<'static>,
    req: &[u8],
    st: &mut Stats,
) -> io::Result<u16> {
    let mut s = handshake(tls, o, name, st).await?;
    s.write_all(req).await?;
    let mut buf = Vec::with_capacity(1024);
    let status = response(&mut s, &mut buf).await?;
    // Read to the server's close, so that the server ends the connection as it
    // would for any `Connection: close` client; a missing close_notify is fine.
    let mut sink = [0u8; 4096];
    while let Ok(n) = s.read(&mut sink).await {
        if n == 0 {
            break;
        }
    }
    Ok(status)
}

async fn run_loop(tls: TlsConnector, o: Arc<Opts>, deadline: Instant) -> Stats {
    let name = match ServerName::try_from(o.server_name.clone()) {
        Ok(n) => n,
        Err(e) => {
            let mut st = Stats::default();
            st.error(format!("bad server name: {e}"));
            return st;
        }
    };
    let close = if o.keep_alive {
        ""
    } else {
        "Connection: close\r\n"
    };
    let req = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\n{close}\r\n",
        o.path, o.server_name
    )
    .into_bytes();
    let mut st = Stats::default();
    let mut conn: Option<(TlsStream<TcpStream>, Vec<u8>)> = None;
    while Instant::now() < deadline {
        let t0 = Instant::now();
        let res = if o.keep_alive {
            tokio::time::timeout(o.timeout, async {
                if conn.is_none() {
                    let s = handshake(&tls, &o, &name, &mut st).await?;
                    conn = Some((s, Vec::with_capacity(16 * 1024)));
                }
                let (s, buf) = conn.as_mut().expect("connected above");
                s.write_all(&req).await?;
                response(s, buf).await
            })
            .await
        } else {
            tokio::time::timeout(o.timeout, one_close(&tls, &o, &name, &req, &mut st)).await
        };
        match res {
            Ok(Ok(200)) => {
                st.requests += 1;
                st.lat_us
                    .push(t0.elapsed().as_micros().min(u32::MAX as u128) as u32);
            }
            Ok(Ok(code)) => st.error(format!("status {code}")),
            Ok(Err(e)) => {
                conn = None;
                st.error(e.to_string());
                // Do not spin on a refused connect.
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            Err(_) => {
                conn = None;
                st.error("timeout".to_string());
            }
        }
    }
    st
}

pub fn run(o: Opts) -> super::Res {
    let cfg = Arc::new(client_config()?);
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
    let o = Arc::new(o);
    let (stats, secs) = rt.block_on(async move {
        let start = Instant::now();
        let deadline = start + o.duration;
        let tasks: Vec<_> = (0..o.concurrency.max(1))
            .map(|_| {
                tokio::spawn(run_loop(
                    TlsConnector::from(loop_config(&cfg, o.resume)),
                    o.clone(),
                    deadline,
                ))
            })
            .collect();
        let mut all = Stats::default();
        for t in tasks {
            if let Ok(st) = t.await {
                all.merge(st);
            }
        }
        (all, start.elapsed().as_secs_f64())
    });
    let mut lat = stats.lat_us;
    lat.sort_unstable();
    let pct = |p: f64| -> u32 {
        if lat.is_empty() {
            return 0;
        }
        lat[(((p / 100.0) * (lat.len() - 1) as f64).round() as usize).min(lat.len() - 1)]
    };
    let map = |m: &BTreeMap<String, u64>| {
        m.iter()
            .map(|(k, v)| format!("\"{}\":{v}", esc(k)))
            .collect::<Vec<_>>()
            .join(",")
    };
    let err = stats
        .first_error
        .map(|e| format!(",\"first_error\":\"{}\"", esc(&e)))
        .unwrap_or_default();
    println!(
        "{{\"requests\":{},\"errors\":{},\"seconds\":{secs:.6},\"requests_per_s\":{:.1},\
         \"handshakes\":{{{}}},\"suites\":{{{}}},\"p50_us\":{},\"p90_us\":{},\"p99_us\":{}{err}}}",
        stats.requests,
        stats.errors,
        stats.requests as f64 / secs,
        map(&stats.handshakes),
        map(&stats.suites),
        pct(50.0),
        pct(90.0),
        pct(99.0),
    );
    Ok(())
}

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "'")
}
