//! A file a filter read when it was built (basic_auth's users, error_pages' page), looked at
//! once a second for as long as the filter is in use: the task ends once the last holder of
//! the filter's state is gone. A new stamp (`file_stamp.rs`: a write, a rename over it, a
//! Kubernetes secret's symlink swap) reads it again off the runtime's threads; a file that
//! reads replaces what the filter had, one that does not leaves it as it was and the log says
//! why. (TLS certificates have a watch of their own, `transport/tls/reload.rs`: a listener's
//! several files change together and are checked as a pair.)

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tracing::{error, info};

use crate::file_stamp::{stamp, Stamp};

/// How often a watched file is looked at.
pub(crate) const PERIOD: Duration = Duration::from_secs(1);

/// Watches `path` for `state`: each change read with `read`, handed to `apply` when it reads
/// (which says, for the log, what it took: "3 users"). `seen` is the file's stamp from
/// before the caller read it, so a change made while it read is not missed. `what` names the
/// file in the log ("users file", "error page"). Outside a runtime (unit tests build filters
/// there) nothing is watched.
pub(crate) fn watch<T, V>(
    state: &Arc<T>,
    path: PathBuf,
    seen: Stamp,
    what: &'static str,
    read: fn(&Path) -> Result<V, String>,
    apply: fn(&T, V) -> String,
) where
    T: Send + Sync + 'static,
    V: Send + 'static,
{
    if tokio::runtime::Handle::try_current().is_err() {
        return;
    }
    let weak: Weak<T> = Arc::downgrade(state);
    tokio::spawn(async move {
        let mut seen = seen;
        let mut tick = tokio::time::interval(PERIOD);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            if weak.strong_count() == 0 {
                return;
            }
            let p = path.clone();
            let Ok(now) = tokio::task::spawn_blocking(move || stamp(&p)).await else {
                continue;
            };
            if now == seen {
                continue;
            }
            seen = now;
            let p = path.clone();
            let Ok(got) = tokio::task::spawn_blocking(move || read(&p)).await else {
                continue;
            };
            let Some(state) = weak.upgrade() else { return };
            match got {
                Ok(v) => {
                    let took = apply(&state, v);
                    info!(file = %path.display(), "{what} reloaded: {took}");
                }
                Err(e) => error!(
                    file = %path.display(),
                    "{what} not reloaded, the previous one stays: {e}"
                ),
            }
        }
    });
}
