//! Certificate files change without a restart. Each TLS listener's files are looked at
//! once a second (a stat each, following symlinks): a rename-replace and a Kubernetes
//! secret's `..data` symlink swap both show as a new inode or mtime, which inotify on the
//! file itself would miss after a swap. A change reloads every pair of the listener; a
//! pair that fails (bad PEM, key not matching, expired) keeps the one before it.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use crate::file_stamp::{stamp, Stamp};
use tracing::{info, warn};

use super::server::TlsServer;

/// How often files are looked at: new pairs are served within this (plus a reload).
const PERIOD: Duration = Duration::from_secs(1);

fn stamps(server: &TlsServer) -> Vec<Stamp> {
    server
        .certs
        .sources()
        .iter()
        .filter(|s| s.is_files())
        .flat_map(|s| [stamp(&s.cert), stamp(&s.key)])
        .collect()
}

/// Watches `server`'s files (not its certificates held in memory, which change only with the
/// config) for as long as it is in use (the task ends once the last
/// snapshot holding it is gone).
pub fn watch(server: &Arc<TlsServer>) {
    let weak: Weak<TlsServer> = Arc::downgrade(server);
    let mut seen = stamps(server);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(PERIOD);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(server) = weak.upgrade() else { return };
            // Stat off the runtime's threads: a slow or hung filesystem must not stall
            // connections.
            let s = server.clone();
            let Ok(now) = tokio::task::spawn_blocking(move || stamps(&s)).await else {
                continue;
            };
            if now == seen {
                continue;
            }
            seen = now;
            let s = server.clone();
            if let Ok(()) = tokio::task::spawn_blocking(move || reload(&s)).await {}
        }
    });
}

fn reload(server: &TlsServer) {
    let r = server.certs.reload(SystemTime::now());
    let sources = server.certs.sources();
    for i in &r.replaced {
        info!(
            listener = &*server.listener,
            cert = %sources[*i].cert.display(),
            "certificate reloaded"
        );
        server.metrics.reloads_ok.fetch_add(1, Relaxed);
    }
    for (i, e) in &r.kept {
        warn!(
            listener = &*server.listener,
            cert = %sources[*i].cert.display(),
            "certificate not reloaded, the previous one stays in use: {e}"
        );
        server.metrics.reloads_failed.fetch_add(1, Relaxed);
    }
}
