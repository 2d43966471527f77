//! `grpc-upstream`: weir-testkit's gRPC Echo backend (`weir.test.Echo` plus
//! `grpc.health.v1.Health`) as a process, for benchmarks and scripts. Serves h2c, or h2
//! over TLS with `--tls-cert` and `--tls-key`. Prints `listening on ADDR` once ready and
//! runs until SIGTERM/SIGINT. Keeps no call log (a benchmark would grow it without bound).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;
use weir_testkit::grpc::GrpcUpstream;

#[derive(Parser, Debug)]
#[command(version, about = "A gRPC Echo upstream for weir (h2c, or h2 over TLS)")]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:50051")]
    listen: SocketAddr,
    /// Name returned in every reply's `server` field.
    #[arg(long, default_value = "upstream")]
    name: String,
    /// Runtime worker threads (default: one per CPU).
    #[arg(long)]
    threads: Option<usize>,
    /// Serve TLS with this certificate chain (PEM; needs --tls-key).
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
}

fn main() {
    let args = Args::parse();
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = args.threads {
        rt.worker_threads(n.max(1));
    }
    let rt = rt.enable_all().build().expect("tokio runtime");
    if let Err(e) = rt.block_on(run(args)) {
        eprintln!("grpc-upstream: {e}");
        std::process::exit(1);
    }
}

async fn run(a: Args) -> std::io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut b = GrpcUpstream::builder(&a.name)
        .addr(a.listen)
        .record_log(false);
    if let (Some(cert), Some(key)) = (a.tls_cert, a.tls_key) {
        b = b.tls(cert, key);
    }
    let up = b.spawn().await?;
    println!("listening on {}", up.addr());
    use std::io::Write;
    std::io::stdout().flush()?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    // Whoever reads stdout may be gone by now: no panic on a closed pipe.
    let (calls, conns) = (up.calls(), up.connections());
    let _ = writeln!(
        std::io::stdout(),
        "stopping after {calls} calls on {conns} connections"
    );
    Ok(())
}
