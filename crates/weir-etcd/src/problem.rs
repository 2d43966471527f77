//! Whether etcd answers, as the watch and the commits last found.

use std::sync::{Arc, Mutex};

use tracing::{info, warn};

/// Why etcd cannot be reached, shared by the watch and the commits.
#[derive(Clone, Default)]
pub(crate) struct Problem(Arc<Mutex<Option<String>>>);

impl Problem {
    pub(crate) fn set(&self, why: Option<String>) {
        weir_metrics::config_store::set_up(why.is_none());
        let mut p = self.0.lock().unwrap();
        match (&*p, &why) {
            (None, Some(w)) => warn!(
                "config store unreachable ({w}); serving the last applied config, refusing changes"
            ),
            (Some(_), None) => info!("config store reachable again"),
            _ => {}
        }
        *p = why;
    }

    /// As `set`, without saying so: before the first config the caller says it better
    /// (there is no "last applied config" to serve yet).
    pub(crate) fn set_quietly(&self, why: String) {
        weir_metrics::config_store::set_up(false);
        *self.0.lock().unwrap() = Some(why);
    }

    pub(crate) fn get(&self) -> Option<String> {
        self.0.lock().unwrap().clone()
    }
}
