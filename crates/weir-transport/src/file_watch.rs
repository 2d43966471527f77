//! Files weir read once and keeps serving from, looked at once a second for as long as
//! their holder is in use (the task ends once the last holder of its state is gone):
//! basic_auth's users, error_pages' page (`watch`), a TLS listener's certificate pairs
//! (`tls/reload.rs`, through `on_change`), a pool's TLS files
//! (`upstream_tls/reload.rs`, the same way). A new stamp (`file_stamp.rs`: a write,
//! a rename over the file, a Kubernetes secret's symlink swap) reads them again; stamps and
//! reads run on the blocking pool, so a slow or hung filesystem never stalls connections.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tracing::{error, info};

use crate::file_stamp::{stamp, Stamp};

/// How often watched files are looked at: a change is served within this (plus its read).
pub(crate) const PERIOD: Duration = Duration::from_secs(1);

/// Every [`PERIOD`], `stamps(state)`; when it differs from the last (at first `seen`,
/// taken by the caller before it read the files, so a change made while it read is not
/// missed), `changed(state)`. Outside a runtime (unit tests build filters there) nothing
/// is watched.
pub(crate) fn on_change<T, S>(
    state: &Arc<T>,
    seen: S,
    stamps: impl Fn(&T) -> S + Send + Sync + 'static,
    changed: impl Fn(&T) + Send + Sync + 'static,
) where
    T: Send + Sync + 'static,
    S: PartialEq + Send + 'static,
{
    if tokio::runtime::Handle::try_current().is_err() {
        return;
    }
    let weak: Weak<T> = Arc::downgrade(state);
    let stamps = Arc::new(stamps);
    let changed = Arc::new(changed);
    tokio::spawn(async move {
        let mut seen = seen;
        let mut tick = tokio::time::interval(PERIOD);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(state) = weak.upgrade() else { return };
            let (s, f) = (state.clone(), stamps.clone());
            let Ok(now) = tokio::task::spawn_blocking(move || f(&s)).await else {
                continue;
            };
            if now == seen {
                continue;
            }
            seen = now;
            let f = changed.clone();
            let _ = tokio::task::spawn_blocking(move || f(&state)).await;
        }
    });
}

/// Watches `path` for `state`: a changed file is read with `read` and, when it reads,
/// handed to `apply` (which says, for the log, what it took: "3 users"); one that does not
/// read leaves `state` as it was and the log says why. `seen` is the file's stamp from
/// before the caller read it. `what` names the file in the log ("users file").
pub fn watch<T, V>(
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
    let p = path.clone();
    on_change(
        state,
        seen,
        move |_| stamp(&p),
        move |state| match read(&path) {
            Ok(v) => {
                let took = apply(state, v);
                info!(file = %path.display(), "{what} reloaded: {took}");
            }
            Err(e) => error!(
                file = %path.display(),
                "{what} not reloaded, the previous one stays: {e}"
            ),
        },
    );
}
