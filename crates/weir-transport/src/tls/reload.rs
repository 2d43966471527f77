//! Certificate files change without a restart. Each TLS listener's files are looked at
//! once a second (a stat each, following symlinks): a rename-replace and a Kubernetes
//! secret's `..data` symlink swap both show as a new inode or mtime, which inotify on the
//! file itself would miss after a swap. A change reloads every pair of the listener; a
//! pair that fails (bad PEM, key not matching, expired) keeps the one before it. A changed
//! client CA file makes the rustls config again (the session tickets kept); one that does
//! not read keeps the CA in use.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::SystemTime;

use crate::file_stamp::{stamp, Stamp};
use crate::file_watch;
use tracing::{info, warn};

use super::server::TlsServer;

fn stamps(server: &TlsServer) -> Vec<Stamp> {
    server
        .certs
        .sources()
        .iter()
        .filter(|s| s.is_files())
        .flat_map(|s| [stamp(&s.cert), stamp(&s.key)])
        .chain(server.settings.client_ca.as_deref().map(stamp))
        .collect()
}

/// Watches `server`'s files (not its certificates held in memory, which change only with the
/// config) for as long as it is in use (`file_watch.rs`: once a second, off the runtime's
/// threads).
pub fn watch(server: &Arc<TlsServer>) {
    file_watch::on_change(server, stamps(server), stamps, reload);
}

fn reload(server: &TlsServer) {
    if let Some(ca) = &server.settings.client_ca {
        let now = stamp(ca);
        let changed = {
            let mut seen = server.client_ca_seen.lock().unwrap();
            std::mem::replace(&mut *seen, now) != now
        };
        if changed {
            reload_client_ca(server, ca);
        }
    }
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

fn reload_client_ca(server: &TlsServer, ca: &std::path::Path) {
    match server.rebuild_config() {
        Ok(()) => {
            info!(
                listener = &*server.listener,
                client_ca = %ca.display(),
                "client CA read again"
            );
            server.metrics.reloads_ok.fetch_add(1, Relaxed);
        }
        Err(e) => {
            warn!(
                listener = &*server.listener,
                client_ca = %ca.display(),
                "client CA not read again, the one before stays in use: {e}"
            );
            server.metrics.reloads_failed.fetch_add(1, Relaxed);
        }
    }
}
