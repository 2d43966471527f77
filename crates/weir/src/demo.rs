//! `weir demo`: three demo backends in-process and a balancer in front of
//! them, from an embedded config. Needs no file and no network.

mod answer;
mod backend;
mod traffic;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use std::sync::Arc;
use tokio::signal::unix::{signal, SignalKind};
use tokio_util::sync::CancellationToken;
use tracing::{error, info};

use weir_admin::api::Auth;
use weir_control::FileSource;

use self::backend::Backend;
use crate::boot::{self, BootError};

use crate::cli::DemoArgs;
use crate::logging;
use crate::run::runtime;

const TEMPLATE: &str = include_str!("demo.toml");

pub fn demo(args: DemoArgs) -> ExitCode {
    logging::init();
    let rt = match runtime(args.threads) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    rt.block_on(run(args.listen, args.tls_listen, args.admin))
}

/// The demo's self-signed pair, in a directory of its own removed at exit.
struct DemoCert {
    dir: std::path::PathBuf,
    cert: std::path::PathBuf,
    key: std::path::PathBuf,
}

impl DemoCert {
    fn make() -> std::io::Result<DemoCert> {
        let dir = std::env::temp_dir().join(format!("weir-demo-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let pair = crate::self_signed::make(&["localhost", "127.0.0.1"], 30)
            .map_err(std::io::Error::other)?;
        let (cert, key) = (dir.join("demo.pem"), dir.join("demo.key"));
        std::fs::write(&cert, pair.cert_pem)?;
        std::fs::write(&key, pair.key_pem)?;
        Ok(DemoCert { dir, cert, key })
    }
}

impl Drop for DemoCert {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn run(listen: SocketAddr, tls_listen: SocketAddr, admin: SocketAddr) -> ExitCode {
    // Before anything listens: a SIGTERM that meets the default action skips the drain.
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        error!("cannot install signal handlers");
        return ExitCode::FAILURE;
    };
    let mut backends = Vec::new();
    for i in 1..=3 {
        // A little latency so the demo behaves like real services.
        let latency = Duration::from_millis(1)..Duration::from_millis(5);
        let b = Backend::spawn(&format!("demo-{i}"), latency).await;
        match b {
            Ok(b) => backends.push(b),
            Err(e) => {
                error!("cannot start demo backend: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let cert = match DemoCert::make() {
        Ok(c) => c,
        Err(e) => {
            error!("cannot write the demo's certificate: {e}");
            return ExitCode::FAILURE;
        }
    };
    let text = TEMPLATE
        .replace("{listen}", &listen.to_string())
        .replace("{tls_listen}", &tls_listen.to_string())
        .replace("{cert}", &cert.cert.display().to_string())
        .replace("{key}", &cert.key.display().to_string())
        .replace("{b1}", &backends[0].addr().to_string())
        .replace("{b2}", &backends[1].addr().to_string())
        .replace("{b3}", &backends[2].addr().to_string());
    let source = match FileSource::embedded(&text, "<demo>") {
        Ok(f) => f,
        Err(e) => {
            // Only a broken build can get here; say so plainly.
            error!("the embedded demo config is invalid:\n{e}");
            return ExitCode::FAILURE;
        }
    };
    let running = match boot::start(Arc::new(source), admin, Auth::new(None, true)).await {
        Ok(r) => r,
        Err(BootError::Start(e)) => {
            error!("{e} (is something else on {listen} or {tls_listen}? try `weir demo --listen 127.0.0.1:8081 --tls-listen 127.0.0.1:8444`)");
            return ExitCode::FAILURE;
        }
        Err(BootError::Admin { source, .. }) => {
            error!("cannot listen on {admin} for the dashboard: {source} (try `weir demo --admin 127.0.0.1:9902`)");
            return ExitCode::FAILURE;
        }
    };
    let (proxy, stop) = (running.proxy, running.stop_admin);
    let traffic_stop = CancellationToken::new();
    tokio::spawn(traffic::trickle(listen, traffic_stop.clone()));
    print_tour(listen, tls_listen, admin, &backends);

    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    info!("shutting down");
    traffic_stop.cancel();
    stop.cancel();
    proxy.shutdown().await;
    ExitCode::SUCCESS
}

fn print_tour(listen: SocketAddr, tls_listen: SocketAddr, admin: SocketAddr, backends: &[Backend]) {
    let url = format!("http://{listen}");
    println!("weir demo: balancing {url} and https://{tls_listen} over three demo backends (weights 1, 1, 2)");
    println!("dashboard: http://{admin}/   (metrics: http://{admin}/metrics, stats: http://{admin}/api/v1/stats)");
    for b in backends {
        println!("  {} on {}", b.name(), b.addr());
    }
    println!();
    println!("Try:");
    println!("  curl {url}/                 # demo-1, demo-2, demo-3 answer in turn (demo-3 twice as often)");
    println!("  curl -H 'Host: api.demo.local' {url}/   # host route: only demo-3");
    println!("  curl {url}/headers          # what the backend saw, X-Forwarded-* included");
    println!("  curl -k https://{tls_listen}/headers   # the same over HTTPS (self-signed, hence -k): X-Forwarded-Proto: https");
    println!("  curl -i {url}/status/503    # upstream answers pass through untouched");
    println!();
    println!("Press Ctrl-C to stop.");
}
