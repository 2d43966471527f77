//! The DNS endpoint source: one follower task per (pool, name) the running config lists,
//! each pool's set the union of its names' last good answers, sent whenever it changes. One
//! sender task sends the sets, so they reach weir in the order they were made.

use std::sync::Arc;

use tokio::runtime::Handle;
use tracing::error;
use weir_config::{Config, DnsName, NamedEndpoint};
use weir_control::{EndpointSource, Sets};

use crate::follow::follow;
use crate::shared::Shared;
use crate::wanted::{self, Key};

/// Backends given by DNS name (`addr = "HOST:PORT"`, `srv = "_SERVICE._PROTO.NAME"`).
#[derive(Default)]
pub struct Dns {
    shared: Arc<Shared>,
}

/// Sends each batch of changed sets until weir stops listening.
async fn send(shared: Arc<Shared>, sets: Sets) {
    loop {
        shared.changed.notified().await;
        for set in shared.take_dirty() {
            if sets.send(set).await.is_err() {
                return;
            }
        }
    }
}

impl EndpointSource for Dns {
    fn name(&self) -> &'static str {
        "dns"
    }

    fn start(&self, sets: Sets) {
        let runtime = Handle::current();
        runtime.spawn(send(self.shared.clone(), sets));
        self.shared.state.lock().unwrap().runtime = Some(runtime);
    }

    fn configured(&self, config: &Arc<Config>) {
        let mut s = self.shared.state.lock().unwrap();
        let Some(runtime) = s.runtime.clone() else {
            return;
        };
        let settings = wanted::settings(config);
        let mut wanted = wanted::names(config);
        if s.settings.as_ref() != Some(&settings) {
            // New resolvers or bounds: every name starts over (its last answer keeps serving).
            for (_, (_, task)) in s.tasks.drain() {
                task.abort();
            }
            s.resolver = None;
            s.settings = Some(settings.clone());
        }
        let gone: Vec<Key> = s
            .tasks
            .keys()
            .filter(|k| !wanted.contains(*k))
            .cloned()
            .collect();
        for key in gone {
            if let Some((_, task)) = s.tasks.remove(&key) {
                task.abort();
            }
            weir_metrics::dns::remove_name(&key.0, &key.1.name.to_string());
        }
        // Answers of names no longer listed leave their pools' sets; a name listed again
        // with another weight keeps its addresses, reweighted, rather than leave the pool
        // until its new follower answers.
        let mut changed = Vec::new();
        for (pool, by_name) in s.answers.iter_mut() {
            let stale: Vec<NamedEndpoint> = by_name
                .keys()
                .filter(|named| !wanted.contains(&(pool.clone(), (*named).clone())))
                .cloned()
                .collect();
            for old in stale {
                let Some(endpoints) = by_name.remove(&old) else {
                    continue;
                };
                changed.push(pool.clone());
                let again = wanted
                    .iter()
                    .find(|(p, n)| p == pool && n.name == old.name)
                    .map(|(_, n)| n.clone());
                if let Some(new) = again {
                    let reweighted = endpoints
                        .into_iter()
                        .map(|mut e| {
                            if matches!(new.name, DnsName::Host { .. }) {
                                e.weight = new.weight;
                            }
                            e
                        })
                        .collect();
                    by_name.insert(new, reweighted);
                }
            }
        }
        for pool in changed {
            s.dirty.insert(pool);
            self.shared.changed.notify_one();
        }
        wanted.retain(|k| !s.tasks.contains_key(k));
        if wanted.is_empty() {
            return;
        }
        // Built when a name first needs it: a config without names reads no resolv.conf.
        if s.resolver.is_none() {
            match crate::resolver::build(&settings.resolvers) {
                Ok(r) => s.resolver = Some(Arc::new(r)),
                Err(e) => {
                    error!("cannot set up the DNS resolver, names are not followed: {e}");
                    return;
                }
            }
        }
        let Some(resolver) = s.resolver.clone() else {
            return;
        };
        for key in wanted {
            s.next_generation += 1;
            let generation = s.next_generation;
            let task = runtime.spawn(follow(
                key.clone(),
                generation,
                resolver.clone(),
                settings.clone(),
                self.shared.clone(),
            ));
            s.tasks.insert(key, (generation, task.abort_handle()));
        }
    }
}
