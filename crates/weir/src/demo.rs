//! `weir demo`: three demo backends in-process and a balancer in front of
//! them, from an embedded config. Needs no file and no network.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use tokio::signal::unix::{signal, SignalKind};
use tracing::{error, info};
use weir_proxy::Proxy;
use weir_testkit::{HttpUpstream, Latency};

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
    rt.block_on(run(args.listen))
}

async fn run(listen: SocketAddr) -> ExitCode {
    let mut backends = Vec::new();
    for i in 1..=3 {
        // A little latency so the demo behaves like real services.
        let b = HttpUpstream::builder(&format!("demo-{i}"))
            .latency(Latency::Uniform(
                Duration::from_millis(1),
                Duration::from_millis(5),
            ))
            .spawn()
            .await;
        match b {
            Ok(b) => backends.push(b),
            Err(e) => {
                error!("cannot start demo backend: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let text = TEMPLATE
        .replace("{listen}", &listen.to_string())
        .replace("{b1}", &backends[0].addr().to_string())
        .replace("{b2}", &backends[1].addr().to_string())
        .replace("{b3}", &backends[2].addr().to_string());
    let config = match weir_config::parse_str(&text, "<demo>") {
        Ok(l) => l.config,
        Err(e) => {
            // Only a broken build can get here; say so plainly.
            error!("the embedded demo config is invalid:\n{e}");
            return ExitCode::FAILURE;
        }
    };
    let proxy = Proxy::new();
    if let Err(e) = proxy.apply(&config) {
        error!("{e} (is something else on {listen}? try `weir demo --listen 127.0.0.1:8081`)");
        return ExitCode::FAILURE;
    }
    print_tour(listen, &backends);

    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        error!("cannot install signal handlers");
        return ExitCode::FAILURE;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    info!("shutting down");
    proxy.shutdown().await;
    ExitCode::SUCCESS
}

fn print_tour(listen: SocketAddr, backends: &[HttpUpstream]) {
    let url = format!("http://{listen}");
    println!("weir demo: balancing {url} over three demo backends (weights 1, 1, 2)");
    for b in backends {
        println!("  {} on {}", b.name(), b.addr());
    }
    println!();
    println!("Try:");
    println!("  curl {url}/                 # demo-1, demo-2, demo-3 answer in turn (demo-3 twice as often)");
    println!("  curl -H 'Host: api.demo.local' {url}/   # host route: only demo-3");
    println!("  curl {url}/headers          # what the backend saw, X-Forwarded-* included");
    println!("  curl -i {url}/status/503    # upstream answers pass through untouched");
    println!();
    println!("Press Ctrl-C to stop.");
}
