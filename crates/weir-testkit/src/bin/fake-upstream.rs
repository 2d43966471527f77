//! `fake-upstream`: one weir-testkit upstream as a process, for benchmarks and scripts.
//! Prints `listening on ADDR` once ready and runs until SIGTERM/SIGINT.
//!
//! For the resilience benchmarks (HTTP mode only), two signals restart it in place:
//! - SIGUSR1: a crash-like flap: stop listening and drop every open connection at once
//!   (requests in progress get no answer), then listen again after `--down-for`;
//! - SIGUSR2: a graceful restart: stop listening, let requests in progress finish
//!   (`Connection: close`), close idle keep-alive connections, then listen again
//!   `--down-for` after the last connection is gone.
//!
//! With `--tls-cert` and `--tls-key` it speaks TLS on `--listen` (rustls, in front of the
//! backend, which then listens on another loopback port); `--tls-client-ca` requires client
//! certificates signed by that CA.
//!
//! With `--ws-echo` (built with the `ws` feature) it is a WebSocket echo backend, for the
//! idle-ws memory benchmark.
//!
//! Each event is printed (`stopped`, `started`) with a timestamp in ms since start.
//! Signals that arrive during a restart are coalesced into one more restart.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use weir_testkit::{parse_duration, HttpUpstream, Latency, TcpUpstream};

#[derive(Parser, Debug)]
#[command(version, about = "A fake HTTP/1.1 (or TCP echo) upstream for weir")]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:9001")]
    listen: SocketAddr,
    /// Name sent in `x-upstream` and as the default body.
    #[arg(long, default_value = "upstream")]
    name: String,
    /// none | fixed:5ms | uniform:1ms-5ms | exp:20ms
    #[arg(long, default_value = "none")]
    latency: Latency,
    /// Worker slots; requests beyond wait.
    #[arg(long)]
    max_concurrency: Option<usize>,
    /// Close keep-alive connections idle longer than this (e.g. 40ms), without a response.
    #[arg(long, value_parser = parse_duration)]
    idle_close: Option<Duration>,
    /// Send `Keep-Alive: timeout=N`.
    #[arg(long)]
    keep_alive_timeout: Option<u64>,
    /// Default route answers N pattern bytes instead of `NAME\n`.
    #[arg(long)]
    body_size: Option<usize>,
    /// Be a TCP echo server instead of HTTP.
    #[arg(long)]
    tcp_echo: bool,
    /// Be a WebSocket echo server instead of HTTP (needs the `ws` feature).
    #[arg(long, conflicts_with_all = ["tcp_echo", "tls_cert"])]
    ws_echo: bool,
    /// With --tcp-echo: send `NAME\n` on connect.
    #[arg(long)]
    greeting: bool,
    /// Runtime worker threads (default: one per CPU).
    #[arg(long)]
    threads: Option<usize>,
    /// How long SIGUSR1 (drop all) and SIGUSR2 (graceful) restarts stay down.
    #[arg(long, value_parser = parse_duration, default_value = "500ms")]
    down_for: Duration,
    /// SIGUSR2: longest wait for in-flight requests before dropping what is left.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    drain_timeout: Duration,
    /// Serve TLS with this certificate chain (PEM; needs --tls-key).
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Require client certificates signed by this CA (PEM).
    #[arg(long, requires = "tls_cert")]
    tls_client_ca: Option<PathBuf>,
}

fn main() {
    let args = Args::parse();
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = args.threads {
        rt.worker_threads(n.max(1));
    }
    let rt = rt.enable_all().build().expect("tokio runtime");
    if let Err(e) = rt.block_on(run(args)) {
        eprintln!("fake-upstream: {e}");
        std::process::exit(1);
    }
}

async fn run(a: Args) -> std::io::Result<()> {
    // Handlers go in before "listening on": a script may signal us right after that line.
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut usr1 = signal(SignalKind::user_defined1())?;
    let mut usr2 = signal(SignalKind::user_defined2())?;
    let (down_for, drain_timeout) = (a.down_for, a.drain_timeout);
    if a.ws_echo {
        return ws_echo(a.listen, &mut term, &mut int).await;
    }
    // With TLS, the backend listens on a loopback port of its own behind the TLS front.
    let tls = match (&a.tls_cert, &a.tls_key) {
        (Some(cert), Some(key)) => Some((
            a.listen,
            weir_testkit::tls::server_config(cert, key, a.tls_client_ca.as_deref())?,
        )),
        _ => None,
    };
    let listen = match tls {
        Some(_) => SocketAddr::from(([127, 0, 0, 1], 0)),
        None => a.listen,
    };

    // Keep the upstream alive until a signal arrives.
    let (_http, _tcp, addr) = if a.tcp_echo {
        let t = TcpUpstream::echo_on(listen, &a.name, a.greeting).await?;
        let addr = t.addr();
        (None, Some(t), addr)
    } else {
        // No request log: a benchmark would grow it without bound.
        let mut b = HttpUpstream::builder(&a.name)
            .addr(listen)
            .latency(a.latency)
            .record_log(false);
        if let Some(n) = a.max_concurrency {
            b = b.max_concurrency(n);
        }
        if let Some(d) = a.idle_close {
            b = b.idle_close(d);
        }
        if let Some(s) = a.keep_alive_timeout {
            b = b.keep_alive_timeout_header(s);
        }
        if let Some(n) = a.body_size {
            b = b.body_size(n);
        }
        let h = b.spawn().await?;
        let addr = h.addr();
        (Some(h), None, addr)
    };
    let _front = match tls {
        Some((at, config)) => Some(weir_testkit::TlsFront::spawn_on(at, addr, config)?),
        None => None,
    };
    let addr = _front.as_ref().map_or(addr, |f| f.addr());
    println!("listening on {addr}");
    use std::io::Write;
    std::io::stdout().flush()?;

    let t0 = std::time::Instant::now();
    let say = |what: &str| {
        println!("{:>8} ms {what}", t0.elapsed().as_millis());
        let _ = std::io::stdout().flush();
    };
    loop {
        let graceful = tokio::select! {
            _ = term.recv() => return Ok(()),
            _ = int.recv() => return Ok(()),
            _ = usr1.recv() => false,
            _ = usr2.recv() => true,
        };
        let Some(h) = &_http else {
            say("restart signals only apply to HTTP mode; ignored");
            continue;
        };
        let restart = async {
            if graceful {
                say("graceful stop: not accepting, finishing in-flight requests");
                if tokio::time::timeout(drain_timeout, h.shutdown_gracefully())
                    .await
                    .is_err()
                {
                    say("drain timeout: dropping the remaining connections");
                    h.stop().await;
                }
            } else {
                h.stop().await;
            }
            say(&format!("stopped; down for {} ms", down_for.as_millis()));
            tokio::time::sleep(down_for).await;
            // The port is ours (SO_REUSEADDR); retry briefly if the kernel disagrees.
            let mut tries = 0;
            loop {
                match h.try_start().await {
                    Ok(()) => break,
                    Err(e) if tries < 50 => {
                        tries += 1;
                        say(&format!("rebind failed ({e}), retrying"));
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    Err(e) => return Err(e),
                }
            }
            say("started");
            Ok(())
        };
        tokio::select! {
            _ = term.recv() => return Ok(()),
            _ = int.recv() => return Ok(()),
            r = restart => r?,
        }
    }
}

/// The WebSocket echo backend until SIGTERM/SIGINT; no restarts.
#[cfg(feature = "ws")]
async fn ws_echo(
    listen: SocketAddr,
    term: &mut tokio::signal::unix::Signal,
    int: &mut tokio::signal::unix::Signal,
) -> std::io::Result<()> {
    use std::io::Write;
    let ws = weir_testkit::WsUpstream::echo_on(listen).await?;
    println!("listening on {}", ws.addr());
    std::io::stdout().flush()?;
    tokio::select! {
        _ = term.recv() => Ok(()),
        _ = int.recv() => Ok(()),
    }
}

#[cfg(not(feature = "ws"))]
async fn ws_echo(
    _: SocketAddr,
    _: &mut tokio::signal::unix::Signal,
    _: &mut tokio::signal::unix::Signal,
) -> std::io::Result<()> {
    Err(std::io::Error::other(
        "--ws-echo needs fake-upstream built with the `ws` feature (cargo build -p weir-testkit --features ws)",
    ))
}
