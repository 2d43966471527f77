//! weir-bench: the load generators and fake upstreams that `bench/` needs and
//! wrk cannot provide: raw TCP streaming, TCP connection rate, paced
//! keep-alive HTTP/1.1 clients that count every failure, and TLS 1.3 load
//! with and without session resumption.
//!
//! Every client subcommand is bounded in time and prints one JSON object on
//! stdout, which `bench/lib` parses. Servers run until killed.
//!
//! ```text
//! weir-bench sink   --listen 127.0.0.1:19001      # read to EOF, answer the byte count
//! weir-bench echo   --listen 127.0.0.1:19001      # echo until EOF
//! weir-bench stream --connect 127.0.0.1:18080 --bytes 1073741824
//! weir-bench conns  --connect 127.0.0.1:18080 --concurrency 50 --duration 10
//! weir-bench paced  --connect 127.0.0.1:18080 --clients 16 --method POST --path /echo \
//!                   --body-size 32 --check-echo --pace 34-46 --duration 12
//! weir-bench floor  --mode epoll|uring --listen 127.0.0.1:18080 --upstream 127.0.0.1:19001
//! weir-bench https  --connect 127.0.0.1:18080 --concurrency 50 --duration 10 [--keep-alive | --resume]
//! ```

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream as StdTcpStream};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Parser)]
#[command(
    name = "weir-bench",
    about = "TCP and HTTP load generators and sinks for weir's benchmarks"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// TCP server for `stream`: reads an 8-byte little-endian length N, then
    /// N bytes, answers the count received (8 bytes), drains to EOF. One thread.
    Sink {
        #[arg(long)]
        listen: SocketAddr,
    },
    /// TCP server: echoes every byte back until EOF, then closes. One thread.
    Echo {
        #[arg(long)]
        listen: SocketAddr,
    },
    /// Push BYTES through one connection to a `sink` (directly or through a
    /// proxy), wait for its byte count, print throughput as JSON.
    Stream {
        #[arg(long)]
        connect: SocketAddr,
        #[arg(long, default_value_t = 1 << 30)]
        bytes: u64,
        /// Size of each write.
        #[arg(long, default_value_t = 256 * 1024)]
        chunk: usize,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 300.0)]
        timeout: f64,
    },
    /// Connection rate against an `echo`: CONCURRENCY loops, each doing
    /// connect, write PAYLOAD bytes, read them back, close; for DURATION
    /// seconds. Prints counts and latency percentiles as JSON.
    Conns {
        #[arg(long)]
        connect: SocketAddr,
        #[arg(long, default_value_t = 50)]
        concurrency: usize,
        /// Seconds to keep starting new connections.
        #[arg(long, default_value_t = 10.0)]
        duration: f64,
        #[arg(long, default_value_t = 64)]
        payload: usize,
        /// Per-connection timeout in seconds (connect + exchange).
        #[arg(long, default_value_t = 5.0)]
        timeout: f64,
        /// Runtime threads for the client.
        #[arg(long, default_value_t = 1)]
        threads: usize,
    },
    /// HTTP/1.1 load: CLIENTS keep-alive connections, each sending METHOD PATH
    /// (with a BODY_SIZE-byte body, unique per request) one request at a time,
    /// a new one every PACE ms (start to start; a random value in the range for
    /// each request; 0 = back to back), for DURATION seconds. A request fails
    /// when the answer is not 2xx, the connection breaks or times out, or (with
    /// --check-echo) the body is not the request body. A client whose
    /// connection broke (or was closed by the server) opens a new one. Prints
    /// counts, failure kinds, a few samples and latency percentiles as JSON.
    Paced {
        #[arg(long)]
        connect: SocketAddr,
        #[arg(long, default_value_t = 16)]
        clients: usize,
        #[arg(long, default_value = "GET")]
        method: String,
        #[arg(long, default_value = "/")]
        path: String,
        /// Request body bytes (0: no body, no Content-Length for GET/HEAD).
        #[arg(long, default_value_t = 0)]
        body_size: usize,
        /// Milliseconds from one request's start to the next: "0", "40" or "34-46".
        #[arg(long, default_value = "0")]
        pace: String,
        #[arg(long, default_value_t = 10.0)]
        duration: f64,
        /// Per-request timeout in seconds (connect + exchange).
        #[arg(long, default_value_t = 10.0)]
        timeout: f64,
        /// The response body must equal the request body (for an /echo route).
        #[arg(long)]
        check_echo: bool,
        /// After a failed request, wait this many ms before the client's next one,
        /// so a proxy that fails fast does not multiply its failure count.
        #[arg(long, default_value_t = 0)]
        fail_pause: u64,
        /// Runtime threads for the client.
        #[arg(long, default_value_t = 1)]
        threads: usize,
    },
    /// The kernel floor of a keep-alive HTTP/1.1 proxy, on epoll or io_uring:
    /// one thread, one upstream connection per client connection (a
    /// measurement, see docs/BENCHMARKS.md). Runs until killed.
    Floor(floor::Args),
    /// HTTPS (TLS 1.3, rustls) load: CONCURRENCY loops of GET PATH for
    /// DURATION seconds, each on a new connection with a full handshake
    /// (`Connection: close`, no session cache), or with --resume resuming
    /// sessions from a shared cache, or with --keep-alive on one connection
    /// per loop. Prints counts, handshake kinds, cipher suites and latency
    /// percentiles as JSON.
    Https {
        #[arg(long)]
        connect: SocketAddr,
        /// SNI and Host.
        #[arg(long, default_value = "bench.test")]
        server_name: String,
        #[arg(long, default_value = "/small")]
        path: String,
        #[arg(long, default_value_t = 50)]
        concurrency: usize,
        #[arg(long, default_value_t = 10.0)]
        duration: f64,
        #[arg(long, conflicts_with = "resume")]
        keep_alive: bool,
        #[arg(long)]
        resume: bool,
        /// Per-request timeout in seconds (with connect and handshake).
        #[arg(long, default_value_t = 5.0)]
        timeout: f64,
        /// Runtime threads for the client.
        #[arg(long, default_value_t = 1)]
        threads: usize,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let res = match cli.cmd {
        Cmd::Sink { listen } => serve(listen, Mode::Sink),
        Cmd::Echo { listen } => serve(listen, Mode::Echo),
        Cmd::Stream {
            connect,
            bytes,
            chunk,
            timeout,
        } => stream(connect, bytes, chunk, Duration::from_secs_f64(timeout)),
        Cmd::Conns {
            connect,
            concurrency,
            duration,
            payload,
            timeout,
            threads,
        } => conns(
            connect,
            concurrency,
            Duration::from_secs_f64(duration),
            payload,
            Duration::from_secs_f64(timeout),
            threads,
        ),
        Cmd::Paced {
            connect,
            clients,
            method,
            path,
            body_size,
            pace,
            duration,
            timeout,
            check_echo,
            fail_pause,
            threads,
        } => match parse_pace(&pace) {
            Ok(pace) => paced::run(paced::Opts {
                connect,
                clients,
                method,
                path,
                body_size,
                pace,
                duration: Duration::from_secs_f64(duration),
                timeout: Duration::from_secs_f64(timeout),
                check_echo,
                fail_pause: Duration::from_millis(fail_pause),
                threads,
            }),
            Err(e) => Err(e.into()),
        },
        Cmd::Floor(args) => floor::run(args),
        Cmd::Https {
            connect,
            server_name,
            path,
            concurrency,
            duration,
            keep_alive,
            resume,
            timeout,
            threads,
        } => https::run(https::Opts {
            connect,
            server_name,
            path,
            concurrency,
            duration: Duration::from_secs_f64(duration),
            keep_alive,
            resume,
            timeout: Duration::from_secs_f64(timeout),
            threads,
        }),
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("weir-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

type Res = Result<(), Box<dyn std::error::Error>>;

mod floor;
mod https;
mod paced;

/// "0" | "40" | "34-46" (milliseconds) -> (lo, hi).
fn parse_pace(s: &str) -> Result<(u64, u64), String> {
    let bad = || format!("bad --pace {s:?}: want MS or LO-HI (milliseconds)");
    let (lo, hi) = match s.split_once('-') {
        Some((a, b)) => (
            a.trim().parse().map_err(|_| bad())?,
            b.trim().parse().map_err(|_| bad())?,
        ),
        None => {
            let v = s.trim().parse().map_err(|_| bad())?;
            (v, v)
        }
    };
    if lo > hi {
        return Err(bad());
    }
    Ok((lo, hi))
}

#[derive(Clone, Copy)]
enum Mode {
    Sink,
    Echo,
}

fn serve(listen: SocketAddr, mode: Mode) -> Res {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let sock = match listen {
            SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
            SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
        };
        sock.set_reuseaddr(true)?;
        sock.bind(listen)?;
        let l: TcpListener = sock.listen(4096)?;
        loop {
            let (s, _) = match l.accept().await {
                Ok(x) => x,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    eprintln!("accept: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            let _ = s.set_nodelay(true);
            tokio::spawn(async move {
                let _ = match mode {
                    Mode::Sink => sink_conn(s).await,
                    Mode::Echo => echo_conn(s).await,
                };
            });
        }
    })
}

async fn sink_conn(mut s: TcpStream) -> std::io::Result<()> {
    // Protocol: 8-byte little-endian length N, then N bytes; the sink answers
    // with the count it received (8 bytes) as soon as it has N, so no
    // half-close has to travel through the proxy. Then it drains to EOF.
    let mut hdr = [0u8; 8];
    s.read_exact(&mut hdr).await?;
    let want = u64::from_le_bytes(hdr);
    let mut buf = vec![0u8; 256 * 1024];
    let mut total: u64 = 0;
    while total < want {
        let n = s.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        total += n as u64;
    }
    s.write_all(&total.to_le_bytes()).await?;
    while s.read(&mut buf).await? > 0 {}
    Ok(())
}

async fn echo_conn(mut s: TcpStream) -> std::io::Result<()> {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = s.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        s.write_all(&buf[..n]).await?;
    }
    s.shutdown().await
}

fn stream(connect: SocketAddr, bytes: u64, chunk: usize, timeout: Duration) -> Res {
    let start = Instant::now();
    let mut s = StdTcpStream::connect_timeout(&connect, timeout)?;
    s.set_write_timeout(Some(timeout))?;
    s.set_read_timeout(Some(timeout))?;
    let buf = vec![0x5au8; chunk.max(1)];
    s.write_all(&bytes.to_le_bytes())?;
    let mut left = bytes;
    while left > 0 {
        if start.elapsed() > timeout {
            return Err(format!("timed out after {:?} with {} bytes left", timeout, left).into());
        }
        let n = (buf.len() as u64).min(left) as usize;
        s.write_all(&buf[..n])?;
        left -= n as u64;
    }
    let mut ack = [0u8; 8];
    s.read_exact(&mut ack)?;
    let secs = start.elapsed().as_secs_f64();
    let _ = s.shutdown(Shutdown::Write);
    let got = u64::from_le_bytes(ack);
    if got != bytes {
        return Err(format!("sink received {got} bytes, sent {bytes}").into());
    }
    println!(
        "{{\"bytes\":{bytes},\"seconds\":{secs:.6},\"mib_per_s\":{:.2}}}",
        bytes as f64 / (1024.0 * 1024.0) / secs
    );
    Ok(())
}

#[derive(Default)]
struct ConnStats {
    ok: u64,
    errors: u64,
    first_error: Option<String>,
    lat_us: Vec<u32>,
}

async fn one_conn(addr: SocketAddr, payload: &[u8], rbuf: &mut [u8]) -> std::io::Result<()> {
    let mut s = TcpStream::connect(addr).await?;
    s.set_nodelay(true)?;
    s.write_all(payload).await?;
    let mut got = 0;
    while got < payload.len() {
        let n = s.read(&mut rbuf[got..payload.len()]).await?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("eof after {got} of {} echoed bytes", payload.len()),
            ));
        }
        got += n;
    }
    if rbuf[..payload.len()] != *payload {
        return Err(std::io::Error::other("echo mismatch"));
    }
    Ok(())
}

fn conns(
    connect: SocketAddr,
    concurrency: usize,
    duration: Duration,
    payload: usize,
    timeout: Duration,
    threads: usize,
) -> Res {
    let rt = if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()?
    };
    let (stats, secs) = rt.block_on(async move {
        let start = Instant::now();
        let deadline = start + duration;
        let mut tasks = Vec::with_capacity(concurrency);
        for i in 0..concurrency.max(1) {
            tasks.push(tokio::spawn(async move {
                let payload: Vec<u8> = (0..payload).map(|j| (i + j) as u8).collect();
                let mut rbuf = vec![0u8; payload.len()];
                let mut st = ConnStats::default();
                while Instant::now() < deadline {
                    let t0 = Instant::now();
                    match tokio::time::timeout(timeout, one_conn(connect, &payload, &mut rbuf))
                        .await
                    {
                        Ok(Ok(())) => {
                            st.ok += 1;
                            st.lat_us
                                .push(t0.elapsed().as_micros().min(u32::MAX as u128) as u32);
                        }
                        Ok(Err(e)) => {
                            st.errors += 1;
                            st.first_error.get_or_insert_with(|| e.to_string());
                            // Do not spin on a refused connect.
                            tokio::time::sleep(Duration::from_millis(1)).await;
                        }
                        Err(_) => {
                            st.errors += 1;
                            st.first_error.get_or_insert_with(|| "timeout".to_string());
                        }
                    }
                }
                st
            }));
        }
        let mut all = ConnStats::default();
        for t in tasks {
            if let Ok(mut st) = t.await {
                all.ok += st.ok;
                all.errors += st.errors;
                if all.first_error.is_none() {
                    all.first_error = st.first_error.take();
                }
                all.lat_us.append(&mut st.lat_us);
            }
        }
        (all, start.elapsed().as_secs_f64())
    });
    let mut lat = stats.lat_us;
    lat.sort_unstable();
    let pct = |p: f64| -> f64 {
        if lat.is_empty() {
            return 0.0;
        }
        let i = ((p / 100.0) * (lat.len() - 1) as f64).round() as usize;
        lat[i.min(lat.len() - 1)] as f64
    };
    let err = stats
        .first_error
        .map(|e| {
            format!(
                ",\"first_error\":\"{}\"",
                e.replace('\\', "\\\\").replace('"', "'")
            )
        })
        .unwrap_or_default();
    println!(
        "{{\"connections\":{},\"errors\":{},\"seconds\":{secs:.6},\"conns_per_s\":{:.1},\"p50_us\":{},\"p90_us\":{},\"p99_us\":{}{err}}}",
        stats.ok,
        stats.errors,
        stats.ok as f64 / secs,
        pct(50.0),
        pct(90.0),
        pct(99.0),
    );
    Ok(())
}
