//! `fake-upstream`: one weir-testkit upstream as a process, for benchmarks and scripts.
//! Prints `listening on ADDR` once ready and runs until SIGTERM/SIGINT.

use std::net::SocketAddr;
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
    /// With --tcp-echo: send `NAME\n` on connect.
    #[arg(long)]
    greeting: bool,
    /// Runtime worker threads (default: one per CPU).
    #[arg(long)]
    threads: Option<usize>,
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

    // Keep the upstream alive until a signal arrives.
    let (_http, _tcp, addr) = if a.tcp_echo {
        let t = TcpUpstream::echo_on(a.listen, &a.name, a.greeting).await?;
        let addr = t.addr();
        (None, Some(t), addr)
    } else {
        // No request log: a benchmark would grow it without bound.
        let mut b = HttpUpstream::builder(&a.name)
            .addr(a.listen)
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
    println!("listening on {addr}");
    use std::io::Write;
    std::io::stdout().flush()?;

    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    Ok(())
}
