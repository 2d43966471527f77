//! A pool's TLS files change without a reload: a rotated CA bundle, a short-lived client
//! certificate renewed beside its key (cert-manager, SPIFFE). They are looked at once a
//! second, as a TLS listener's certificates are (`tls/reload.rs`), and read again
//! when any of them changed. New connections use what they read; connections already open
//! keep the session they have. Files that do not read together (a CA that is not PEM, a key
//! that does not match its certificate, as between the two writes of a renewal) leave the
//! settings in use as they were, and are tried again at their next change.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use tracing::{info, warn};
use weir_config::PoolTls;

use super::connectors::Connectors;
use super::handshake::UpstreamTls;
use crate::file_stamp::{stamp, Stamp};
use crate::file_watch;

/// The stamps of the files `settings` names.
pub(super) fn stamps(settings: &PoolTls) -> Vec<Stamp> {
    [&settings.ca, &settings.cert, &settings.key]
        .into_iter()
        .flatten()
        .map(|p| stamp(p))
        .collect()
}

/// Watches `tls`'s files for as long as it is in use (`file_watch.rs`: once a second, off
/// the runtime's threads); `seen`: their stamps from before they were read.
pub(super) fn watch(tls: &Arc<UpstreamTls>, seen: Vec<Stamp>) {
    if stamps(&tls.settings).is_empty() {
        return;
    }
    file_watch::on_change(tls, seen, |t| stamps(&t.settings), reload);
}

fn reload(tls: &UpstreamTls) {
    let files = [&tls.settings.ca, &tls.settings.cert, &tls.settings.key]
        .into_iter()
        .flatten()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let pool = tls.pool.as_str();
    match Connectors::build(&tls.settings) {
        Ok(c) => {
            tls.connectors.store(Arc::new(c));
            tls.reloads_ok.fetch_add(1, Relaxed);
            info!(pool, files, "pool TLS files read again");
        }
        Err(e) => {
            tls.reloads_failed.fetch_add(1, Relaxed);
            warn!(
                pool,
                files, "pool TLS files not read again, the settings before stay in use: {e}"
            );
        }
    }
}
