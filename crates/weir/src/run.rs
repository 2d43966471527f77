//! `weir run`: load the file, start the data plane, reload on change or
//! SIGHUP, drain on SIGTERM/SIGINT.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use tokio::signal::unix::{signal, SignalKind};
use tracing::{error, info, warn};
use weir_config::{Config, LoadError};
use weir_proxy::Proxy;

use crate::cli::RunArgs;
use crate::logging;
use crate::reload::Watcher;

pub fn run(args: RunArgs) -> ExitCode {
    logging::init();
    let loaded = match weir_config::load_file(&args.config) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    for w in &loaded.warnings {
        warn!("{w}");
    }
    let runtime = match runtime(args.threads) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(serve(args.config, loaded.config))
}

pub fn runtime(threads: Option<usize>) -> std::io::Result<tokio::runtime::Runtime> {
    let mut b = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = threads {
        b.worker_threads(n.max(1));
    }
    b.enable_all().thread_name("weir-worker").build()
}

async fn serve(path: PathBuf, config: Config) -> ExitCode {
    let proxy = Proxy::new();
    if let Err(e) = proxy.apply(&config) {
        error!("{e}");
        return ExitCode::FAILURE;
    }
    info!("weir running: {}", weir_config::summary(&config));
    let mut current = config;

    let (mut watcher, mut changed) = match Watcher::new(&path) {
        Ok(w) => w,
        Err(e) => {
            // Reload on SIGHUP still works; say why the automatic one does not.
            warn!("not watching {} for changes: {e}", path.display());
            Watcher::disabled()
        }
    };
    let (mut hup, mut term, mut int) = match (
        signal(SignalKind::hangup()),
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(h), Ok(t), Ok(i)) => (h, t, i),
        _ => {
            error!("cannot install signal handlers");
            return ExitCode::FAILURE;
        }
    };
    loop {
        tokio::select! {
            _ = hup.recv() => {
                info!("SIGHUP: reloading {}", path.display());
                reload(&proxy, &path, &mut current);
            }
            Some(()) = changed.recv() => {
                // Editors write in bursts; settle before reading.
                watcher.settle(&mut changed).await;
                info!("{} changed: reloading", path.display());
                reload(&proxy, &path, &mut current);
            }
            _ = term.recv() => break,
            _ = int.recv() => break,
        }
    }
    info!("shutting down: no new connections; in-flight requests may finish");
    let drain = shutdown(proxy.clone());
    tokio::select! {
        _ = drain => info!("shutdown complete"),
        _ = int.recv() => warn!("second interrupt: exiting now"),
    }
    ExitCode::SUCCESS
}

async fn shutdown(proxy: Arc<Proxy>) {
    proxy.shutdown().await;
}

/// Validates the file, then applies it; any failure keeps the running config.
fn reload(proxy: &Proxy, path: &std::path::Path, current: &mut Config) {
    match weir_config::load_file(path) {
        Ok(loaded) => {
            for w in &loaded.warnings {
                warn!("{w}");
            }
            if loaded.config == *current {
                info!("config unchanged");
                return;
            }
            match proxy.apply(&loaded.config) {
                Ok(()) => {
                    info!("config reloaded: {}", weir_config::summary(&loaded.config));
                    *current = loaded.config;
                }
                Err(e) => error!("reload failed, running config unchanged: {e}"),
            }
        }
        Err(LoadError::Invalid(diags)) => {
            error!("reload rejected, running config unchanged:\n{diags}");
        }
        Err(e) => error!("reload failed, running config unchanged: {e}"),
    }
}
