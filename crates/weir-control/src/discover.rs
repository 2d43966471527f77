//! Endpoint sources at work (`discovery/`): each sends endpoint sets, which the running
//! config takes one batch at a time, between changes, and hands to the data plane as an
//! endpoint change. Apart from control.rs because it only uses `RunningConfig`, as
//! lease_upkeep.rs does.

use std::collections::BTreeSet;
use std::sync::{Arc, Weak};

use tokio::sync::mpsc;
use tracing::info;
use weir_config::Config;

use crate::control::RunningConfig;
use crate::discovery::source::{EndpointSet, EndpointSource};

/// Sets a source may send before it waits for weir to take them.
const BACKLOG: usize = 1024;

impl RunningConfig {
    /// Starts `sources`, each told the running config at once and after every change, and
    /// takes their endpoint sets until weir stops. Called once, after [`RunningConfig::start`].
    pub fn discover(self: &Arc<Self>, sources: Vec<Arc<dyn EndpointSource>>) {
        if sources.is_empty() {
            return;
        }
        let config = Arc::new(self.model.lock().unwrap().config().clone());
        for source in &sources {
            let (tx, rx) = mpsc::channel(BACKLOG);
            tokio::spawn(follow(Arc::downgrade(self), source.name(), rx));
            source.start(tx);
            source.configured(&config);
        }
        *self.endpoint_sources.write().unwrap() = sources;
    }

    /// Tells every endpoint source what the config now asks for.
    pub(crate) fn configured(&self, config: &Arc<Config>) {
        for source in self.endpoint_sources.read().unwrap().iter() {
            source.configured(config);
        }
    }

    /// Takes `sets` from `source` and swaps the endpoints of the pools they change.
    async fn take_sets(&self, source: &'static str, sets: Vec<EndpointSet>) {
        // Between changes: a commit's config and these sets reach the data plane in order.
        let _one = self.writes.lock().await;
        let mut pools = BTreeSet::new();
        {
            let mut discovered = self.discovered.lock().unwrap();
            for set in sets {
                let pool = set.pool.clone();
                if discovered.take(source, set) {
                    info!(
                        "endpoints of pool {pool} from {source}: {} in all from endpoint sources",
                        discovered.count(&pool)
                    );
                    pools.insert(pool);
                }
            }
        }
        if pools.is_empty() {
            return;
        }
        let config = Arc::new(self.model.lock().unwrap().config().clone());
        let runs = self.discovered.lock().unwrap().merge(&config);
        self.proxy.update_pools(&runs, &pools);
    }
}

/// Takes what one source sends, each burst as one batch, until the source or weir stops.
async fn follow(
    config: Weak<RunningConfig>,
    source: &'static str,
    mut sets: mpsc::Receiver<EndpointSet>,
) {
    while let Some(first) = sets.recv().await {
        let Some(config) = config.upgrade() else {
            return;
        };
        let mut batch = vec![first];
        while let Ok(next) = sets.try_recv() {
            batch.push(next);
        }
        config.take_sets(source, batch).await;
    }
}
