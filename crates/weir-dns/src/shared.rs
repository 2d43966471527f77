//! What the DNS source's tasks share: the followers running, each name's last good answer,
//! and the pools whose set changed, which the sender takes. Below both the source (which
//! starts and stops followers) and the followers (which give answers).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use hickory_resolver::TokioResolver;
use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio::task::AbortHandle;
use weir_config::{Endpoint, NamedEndpoint};
use weir_control::EndpointSet;

use crate::wanted::{Key, Settings};

#[derive(Default)]
pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    /// Some pool's set changed: the sender task sends the dirty pools' sets.
    pub(crate) changed: Notify,
}

#[derive(Default)]
pub(crate) struct State {
    pub(crate) runtime: Option<Handle>,
    pub(crate) settings: Option<Settings>,
    pub(crate) resolver: Option<Arc<TokioResolver>>,
    /// The followers running, each with its generation (an answer from an older one is
    /// dropped).
    pub(crate) tasks: HashMap<Key, (u64, AbortHandle)>,
    pub(crate) next_generation: u64,
    /// By pool, then name: each name's last good answer.
    pub(crate) answers: BTreeMap<String, BTreeMap<NamedEndpoint, Vec<Endpoint>>>,
    /// Pools whose set changed since the sender last sent.
    pub(crate) dirty: BTreeSet<String>,
}

impl Shared {
    /// `key`'s follower (of `generation`) has `endpoints` now.
    pub(crate) fn answer(&self, key: &Key, generation: u64, endpoints: Vec<Endpoint>) {
        let mut s = self.state.lock().unwrap();
        if s.tasks.get(key).map(|t| t.0) != Some(generation) {
            return;
        }
        let (pool, named) = key;
        let by_name = s.answers.entry(pool.clone()).or_default();
        if by_name.get(named) != Some(&endpoints) {
            by_name.insert(named.clone(), endpoints);
            s.dirty.insert(pool.clone());
            self.changed.notify_one();
        }
    }

    /// The addresses of `key`'s last good answer.
    pub(crate) fn kept(&self, key: &Key) -> Vec<String> {
        let s = self.state.lock().unwrap();
        s.answers
            .get(&key.0)
            .and_then(|m| m.get(&key.1))
            .map(|e| e.iter().map(|e| e.addr.to_string()).collect())
            .unwrap_or_default()
    }

    /// Whether `key`'s follower of `generation` is still wanted.
    pub(crate) fn current(&self, key: &Key, generation: u64) -> bool {
        self.state.lock().unwrap().tasks.get(key).map(|t| t.0) == Some(generation)
    }

    /// The dirty pools' sets: the union of their names' answers.
    pub(crate) fn take_dirty(&self) -> Vec<EndpointSet> {
        let mut s = self.state.lock().unwrap();
        let dirty = std::mem::take(&mut s.dirty);
        dirty
            .into_iter()
            .map(|pool| EndpointSet {
                endpoints: s
                    .answers
                    .get(&pool)
                    .map(|m| m.values().flatten().cloned().collect())
                    .unwrap_or_default(),
                pool,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_config::DnsName;

    fn key(pool: &str, host: &str) -> Key {
        let name = DnsName::Host {
            host: host.into(),
            port: 80,
        };
        (pool.into(), NamedEndpoint { name, weight: 1 })
    }

    fn ep(addr: &str) -> Endpoint {
        Endpoint {
            addr: addr.parse().unwrap(),
            weight: 1,
        }
    }

    #[test]
    fn a_pools_set_is_the_union_of_its_names_and_a_stale_follower_is_ignored() {
        let shared = Shared::default();
        let (a, b) = (key("app", "a.internal"), key("app", "b.internal"));
        {
            let mut s = shared.state.lock().unwrap();
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            let idle = rt.spawn(async {}).abort_handle();
            s.tasks.insert(a.clone(), (1, idle.clone()));
            s.tasks.insert(b.clone(), (2, idle));
        }
        shared.answer(&a, 1, vec![ep("10.0.0.1:80")]);
        shared.answer(&b, 2, vec![ep("10.0.0.2:80")]);
        // An answer from a follower that was replaced does not count.
        shared.answer(&a, 7, vec![ep("10.0.0.9:80")]);
        let sets = shared.take_dirty();
        assert_eq!(sets.len(), 1);
        assert_eq!(sets[0].pool, "app");
        assert_eq!(
            sets[0].endpoints,
            vec![ep("10.0.0.1:80"), ep("10.0.0.2:80")]
        );
        // The same answer again changes nothing.
        shared.answer(&a, 1, vec![ep("10.0.0.1:80")]);
        assert!(shared.take_dirty().is_empty());
        assert_eq!(shared.kept(&a), ["10.0.0.1:80"]);
        assert!(!shared.current(&a, 7));
    }
}
