//! `weir run`: load the file, start the data plane, reload on change or
//! SIGHUP, drain on SIGTERM/SIGINT.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use tokio::signal::unix::{signal, SignalKind};
use tokio_util::sync::CancellationToken;
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
    let admin = args.admin.unwrap_or(loaded.config.admin.listen);
    runtime.block_on(serve(args.config, loaded.config, admin))
}

pub fn runtime(threads: Option<usize>) -> std::io::Result<tokio::runtime::Runtime> {
    // A current-thread runtime for --threads 1 measured no different (within
    // noise) from a one-worker multi-thread one, so there is one code path.
    let mut b = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = threads {
        b.worker_threads(n.max(1));
    }
    b.enable_all().thread_name("weir-worker").build()
}

async fn serve(path: PathBuf, config: Config, admin: SocketAddr) -> ExitCode {
    let proxy = Proxy::new();
    if let Err(e) = proxy.apply(&config) {
        error!("{e}");
        return ExitCode::FAILURE;
    }
    let admin_listener = match weir_admin::bind(admin).await {
        Ok(l) => l,
        Err(e) => {
            error!("cannot listen on {admin} for the admin API: {e} (set admin.listen or --admin)");
            return ExitCode::FAILURE;
        }
    };
    let stop_admin = CancellationToken::new();
    tokio::spawn(weir_admin::serve(
        admin_listener,
        proxy.clone(),
        stop_admin.clone(),
    ));
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
    let (mut hup, mut term, mut int, mut usr1) = match (
        signal(SignalKind::hangup()),
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::user_defined1()),
    ) {
        (Ok(h), Ok(t), Ok(i), Ok(u)) => (h, t, i, u),
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
            _ = usr1.recv() => {
                info!("SIGUSR1: reopening access logs");
                proxy.reopen_logs();
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
    stop_admin.cancel();
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
            if loaded.config.admin != current.admin {
                warn!("[admin] changes take effect at the next start");
            }
            match proxy.apply(&loaded.config) {
                Ok(()) => {
                    proxy.note_reload(true);
                    info!("config reloaded: {}", weir_config::summary(&loaded.config));
                    *current = loaded.config;
                }
                Err(e) => {
                    proxy.note_reload(false);
                    error!("reload failed, running config unchanged: {e}");
                }
            }
        }
        Err(LoadError::Invalid(diags)) => {
            proxy.note_reload(false);
            error!("reload rejected, running config unchanged:\n{diags}");
        }
        Err(e) => {
            proxy.note_reload(false);
            error!("reload failed, running config unchanged: {e}");
        }
    }
}
