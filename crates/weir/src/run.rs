//! `weir run`: take the config from a file (-c) or the store (--data), start the data plane
//! and the admin listener, reload the file on change or SIGHUP, drain on SIGTERM/SIGINT.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use tokio::signal::unix::{signal, SignalKind};
use tracing::{error, info, warn};
use weir_admin::api::Auth;
use weir_control::{FileSource, Source, StoreSource};
use weir_store::Store;

use crate::boot::{self, BootError};

use crate::cli::RunArgs;
use crate::logging;
use crate::reload::Watcher;

/// Where the store lives when neither -c nor --data is given.
const DEFAULT_DATA: &str = "./weir-data";
const DEFAULT_ADMIN: &str = "127.0.0.1:9901";

pub fn run(args: RunArgs) -> ExitCode {
    if let Some(file) = &args.stray {
        return stray(file, args.config.is_some());
    }
    logging::init();
    let runtime = match runtime(args.threads) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// `weir run FILE`: a usage error (exit 2, as clap's) that shows the command with `-c`.
fn stray(file: &Path, with_c: bool) -> ExitCode {
    let file = file.display();
    if with_c {
        eprintln!("error: unexpected argument '{file}': weir run takes one config file, with -c");
    } else {
        eprintln!(
            "error: unexpected argument '{file}': weir run takes its config file with -c:\n\n  \
             weir run -c {file}\n\n(without -c, weir runs from its store under --data; see \
             `weir run --help`)"
        );
    }
    ExitCode::from(2)
}

pub fn runtime(threads: Option<usize>) -> std::io::Result<tokio::runtime::Runtime> {
    // A current-thread runtime for --threads 1 measured no different (within
    // noise) from a one-worker multi-thread one, so there is one code path.
    let mut b = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = threads {
        // At least 1: the command line refuses 0.
        b.worker_threads(n);
    }
    b.enable_all()
        .thread_name("weir-worker")
        .on_thread_park(crate::alloc::on_park)
        .build()
}

/// The source of the config, the admin listener's address, and its token file.
type Opened = (Arc<dyn Source>, SocketAddr, Option<PathBuf>);

/// The source of the config, and the admin listener's address and token file.
async fn source(args: &RunArgs) -> Result<Opened, String> {
    if let Some(url) = &args.store {
        return shared(args, url).await;
    }
    match &args.config {
        Some(path) => {
            let f = FileSource::open(path.clone())?;
            let admin = args.admin.unwrap_or(f.admin().listen);
            let token = args.token_file.clone().or(f.admin().token_file.clone());
            Ok((Arc::new(f), admin, token))
        }
        None => {
            let dir = args.data.clone().unwrap_or_else(|| DEFAULT_DATA.into());
            let store = Store::open(&dir).map_err(|e| e.to_string())?;
            info!("config store: {}", store.path().display());
            let (admin, token, preamble) = admin_of(args);
            Ok((
                Arc::new(StoreSource::new(Arc::new(store), preamble)),
                admin,
                token,
            ))
        }
    }
}

/// The admin address and token file without a config file, and `[admin]` as TOML for
/// validation (which must see the admin listener, so no listener can take its port).
fn admin_of(args: &RunArgs) -> (SocketAddr, Option<PathBuf>, String) {
    let admin = args
        .admin
        .unwrap_or_else(|| DEFAULT_ADMIN.parse().expect("a valid address"));
    let token = args.token_file.clone();
    let mut preamble = format!("[admin]\nlisten = \"{admin}\"\n");
    if let Some(t) = &token {
        preamble.push_str(&format!("token_file = {:?}\n", t.display().to_string()));
    }
    (admin, token, preamble)
}

/// `--store etcd://...`: a store shared by replicas.
#[cfg(feature = "etcd")]
async fn shared(args: &RunArgs, url: &str) -> Result<Opened, String> {
    let url = weir_etcd::StoreUrl::parse(url).map_err(|e| e.to_string())?;
    let (admin, token, preamble) = admin_of(args);
    let source = weir_etcd::EtcdSource::connect(weir_etcd::Options {
        url,
        ca: args.store_ca.clone(),
        cert: args.store_cert.clone(),
        key: args.store_key.clone(),
        user_file: args.store_user_file.clone(),
        preamble,
        cache: args
            .store_cache
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA).join("store-cache.json")),
        timeout: args.store_timeout.unwrap_or(weir_etcd::DEFAULT_TIMEOUT),
    })
    .await
    .map_err(|e| e.to_string())?;
    Ok((Arc::new(source), admin, token))
}

#[cfg(not(feature = "etcd"))]
async fn shared(_args: &RunArgs, url: &str) -> Result<Opened, String> {
    Err(format!(
        "--store {url}: this weir was built without etcd support; build it with \
         `cargo build --release --features etcd` (which needs protoc: apt-get install protobuf-compiler)"
    ))
}

async fn serve(args: RunArgs) -> Result<(), String> {
    let (source, admin, token_file) = source(&args).await?;
    let token = match &token_file {
        Some(p) => Some(Auth::read_token(p).map_err(|e| e.to_string())?),
        None => None,
    };
    let loopback = weir_config::is_loopback(admin.ip());
    if !loopback && token.is_none() {
        return Err(format!(
            "the admin listener on {admin} is reachable from other hosts and can change the config; \
             give it a token (--token-file or admin.token_file) or listen on loopback"
        ));
    }
    // Before the first listener opens: a SIGHUP that arrives once weir
    // accepts (a reload right after a start) must find its handler, not the
    // default action, which ends the process.
    let (mut hup, mut term, mut int, mut usr1) = match (
        signal(SignalKind::hangup()),
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::user_defined1()),
    ) {
        (Ok(h), Ok(t), Ok(i), Ok(u)) => (h, t, i, u),
        _ => return Err("cannot install signal handlers".into()),
    };
    // Watching before anything listens: a change made as soon as weir answers
    // was missed when the watch began after the admin listener opened.
    let (mut watcher, mut changed) = match &args.config {
        Some(path) => Watcher::new(path).unwrap_or_else(|e| {
            // Reload on SIGHUP still works; say why the automatic one does not.
            warn!("not watching {} for changes: {e}", path.display());
            Watcher::disabled()
        }),
        None => Watcher::disabled(),
    };
    let boot::Running {
        proxy,
        control,
        stop_admin,
    } = boot::start(source, admin, Auth::new(token, loopback))
        .await
        .map_err(|e| match e {
            BootError::Admin { source, .. } => format!(
                "cannot listen on {admin} for the admin API: {source} (set admin.listen or --admin)"
            ),
            e => e.to_string(),
        })?;

    loop {
        tokio::select! {
            _ = hup.recv() => {
                if control.is_file_mode() {
                    info!("SIGHUP: reloading the config file");
                    control.refresh().await;
                } else {
                    info!("SIGHUP: nothing to reload; the config store applies changes as they commit");
                }
            }
            Some(()) = changed.recv() => {
                // Editors write in bursts; settle before reading.
                watcher.settle(&mut changed).await;
                // An editor that deletes the file and writes it anew leaves none for a
                // moment: no failed reload, as the file's return is another change. (SIGHUP
                // still reads it, and says so when it is missing.)
                if let Some(gone) = args.config.as_ref().filter(|p| !p.exists()) {
                    info!(
                        "config file {} is gone: the running config stays, and the file is read when it is back",
                        gone.display()
                    );
                    continue;
                }
                info!("config file changed: reloading");
                control.refresh().await;
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
    tokio::select! {
        _ = proxy.shutdown() => info!("shutdown complete"),
        _ = int.recv() => warn!("second interrupt: exiting now"),
    }
    stop_admin.cancel();
    Ok(())
}
