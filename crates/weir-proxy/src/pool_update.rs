//! An endpoint change (a registration, a lease's expiry, a future EndpointSlice update) swaps
//! the endpoints of the pools it names and reuses everything else of the running snapshot:
//! the other pools as they are, route tables copied with only the targets of those pools
//! pointed at their new `PoolRt`. A full rebuild re-sorted every route table, which at
//! 1,000 routes and pools took most of an endpoint change's time.
//!
//! What happens to endpoints is what `Snapshot::build` does: one that stays keeps its state,
//! a new one slow-starts and gets its health checker, a removed one drains and its metrics
//! series go.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use weir_config::{Config, HealthCheck, InitialState};

use crate::Proxy;
use weir_http::counts::{Counts, Labels};
use weir_pipeline::router::TargetMetrics;
use weir_pipeline::snapshot::{sync_checker, Registry, Snapshot};
use weir_upstream::endpoint::EndpointRt;
use weir_upstream::pool::PoolRt;

impl Proxy {
    /// Publishes `cfg`, which differs from the running config only in the endpoints of
    /// `pools`. Anything else must go through [`Proxy::prepare`] and [`Proxy::install`].
    pub fn update_pools(&self, cfg: &Arc<Config>, pools: &BTreeSet<String>) {
        let mut installed = self.installed.lock().unwrap();
        let registry = &mut installed.registry;
        let old = self.shared.snapshot.load_full();
        let mut next_pools = old.pools.clone();
        let mut swapped: HashMap<Arc<str>, Arc<PoolRt>> = HashMap::new();
        for name in pools {
            let (Some(p), Some(before)) = (cfg.pools.get(name), old.pools.get(name.as_str()))
            else {
                continue;
            };
            let rt = Arc::new(swap(registry, cfg, p, before));
            next_pools.insert(rt.name.clone(), rt.clone());
            swapped.insert(rt.name.clone(), rt);
        }
        let mut listeners = old.listeners.clone();
        for l in listeners.iter_mut().flatten() {
            if let Some(p) = l.pool.as_mut() {
                if let Some(rt) = swapped.get(&p.name) {
                    *p = rt.clone();
                }
            }
            for t in l.routes.targets_mut() {
                let Some(rt) = swapped.get(&t.pool.name) else {
                    continue;
                };
                // The old snapshot keeps its own.
                let t = Arc::make_mut(t);
                let route = t.route.clone().unwrap_or_else(|| "".into());
                t.metrics = target_metrics(registry, &l.name, &route, rt);
                t.pool = rt.clone();
            }
        }
        let snapshot = Arc::new(Snapshot {
            config: cfg.clone(),
            listeners,
            pools: next_pools,
        });
        self.shared.snapshot.store(snapshot);
        for rt in swapped.values() {
            rt.shared.queue.install(rt);
        }
        weir_metrics::GLOBAL.version.fetch_add(1, Relaxed);
    }
}

/// Pool `before`'s next runtime, with the endpoints of `p`. An endpoint change leaves the
/// list in order (the model lists endpoints by name), so most endpoints are found at the
/// next place in `before`, without hashing: at 10,000 endpoints the registry lookups were
/// most of the change's time.
fn swap(registry: &mut Registry, cfg: &Config, p: &weir_config::Pool, before: &PoolRt) -> PoolRt {
    let name = before.name.clone();
    let up = p.health.check == HealthCheck::None || p.health.initial == InitialState::Healthy;
    // Checkers restart only when the health settings change; an endpoint change keeps them.
    let same_checks = before.health == p.health;
    let old = &before.endpoints;
    let mut kept = vec![false; old.len()];
    let mut next = 0;
    let mut endpoints = Vec::with_capacity(p.endpoints.len());
    for e in &p.endpoints {
        // The next old endpoint, or the one after it when one was removed.
        let at = (next..old.len().min(next + 2)).find(|&k| !kept[k] && old[k].addr == e.addr);
        let rt = match at {
            Some(k) => {
                kept[k] = true;
                next = k + 1;
                old[k].clone()
            }
            None => {
                let key = (name.clone(), e.addr);
                match registry.endpoints.get(&key) {
                    // In the pool already, elsewhere in the list.
                    Some(rt) => {
                        if let Some(k) = old.iter().position(|o| Arc::ptr_eq(o, rt)) {
                            kept[k] = true;
                        }
                        rt.clone()
                    }
                    None => {
                        let rt =
                            Arc::new(EndpointRt::new(name.clone(), e.addr, registry.started, up));
                        registry.endpoints.insert(key.clone(), rt.clone());
                        sync_checker(&mut registry.checkers, &key, &rt, p, before.tls.as_ref());
                        endpoints.push(rt);
                        continue;
                    }
                }
            }
        };
        if !same_checks {
            sync_checker(
                &mut registry.checkers,
                &(name.clone(), e.addr),
                &rt,
                p,
                before.tls.as_ref(),
            );
        }
        endpoints.push(rt);
    }
    let mut gone: HashSet<Arc<str>> = HashSet::new();
    for (ep, _) in old.iter().zip(&kept).filter(|(_, kept)| !**kept) {
        let key = (name.clone(), ep.addr);
        ep.drain(cfg.global.drain_grace);
        registry.endpoints.remove(&key);
        registry.checkers.remove(&key);
        gone.insert(ep.addr_str.clone());
    }
    if !gone.is_empty() {
        registry
            .series
            .retain(|l, _| l.pool != name || !gone.contains(&l.endpoint));
    }
    // An endpoint change leaves the tls table as it was.
    PoolRt::new(
        name,
        p,
        endpoints,
        before.shared.clone(),
        before.tls.clone(),
    )
}

/// A route target's counters for `pool`'s endpoints, the existing ones kept.
fn target_metrics(
    registry: &mut Registry,
    listener: &Arc<str>,
    route: &Arc<str>,
    pool: &PoolRt,
) -> TargetMetrics {
    let labels = |endpoint: &Arc<str>| Labels {
        listener: listener.clone(),
        route: route.clone(),
        pool: pool.name.clone(),
        endpoint: endpoint.clone(),
    };
    let mut counts = |l: Labels| {
        registry
            .series
            .entry(l.clone())
            .or_insert_with(|| Arc::new(Counts::new(l)))
            .clone()
    };
    let none: Arc<str> = "".into();
    let by_endpoint = pool
        .endpoints
        .iter()
        .map(|e| counts(labels(&e.addr_str)))
        .collect();
    let no_endpoint = counts(labels(&none));
    let duration = registry.durations.entry(labels(&none)).or_default().clone();
    TargetMetrics {
        by_endpoint,
        no_endpoint,
        duration,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"
[listeners.web]
bind = "127.0.0.1:0"
pool = "a"
[routes.r]
listener = "web"
path_prefix = "/b"
pool = "b"
[pools.a]
endpoints = [{ addr = "127.0.0.1:9001" }]
[pools.b]
endpoints = [{ addr = "127.0.0.1:9002" }, { addr = "127.0.0.1:9003" }]
"#;

    #[tokio::test]
    async fn an_endpoint_change_swaps_only_its_pool_and_keeps_endpoint_state() {
        let cfg = weir_config::parse_str(CONFIG, "t").unwrap().config;
        let proxy = Proxy::new();
        proxy.apply(&cfg).unwrap();
        let before = proxy.shared.snapshot.load_full();
        let mut next = cfg.clone();
        next.pools.get_mut("b").unwrap().endpoints = vec![
            weir_config::Endpoint {
                addr: "127.0.0.1:9003".parse().unwrap(),
                weight: 1,
            },
            weir_config::Endpoint {
                addr: "127.0.0.1:9004".parse().unwrap(),
                weight: 1,
            },
        ];
        proxy.update_pools(&Arc::new(next), &["b".to_owned()].into());
        let after = proxy.shared.snapshot.load_full();

        // The other pool is the same runtime; the route points at the new pool b.
        assert!(Arc::ptr_eq(&before.pools["a"], &after.pools["a"]));
        let l = after.listeners.iter().flatten().next().unwrap();
        let t = l.routes.lookup(None, "/b").unwrap();
        assert!(Arc::ptr_eq(&t.pool, &after.pools["b"]));
        let addrs: Vec<String> = t
            .pool
            .endpoints
            .iter()
            .map(|e| e.addr.to_string())
            .collect();
        assert_eq!(addrs, ["127.0.0.1:9003", "127.0.0.1:9004"]);
        assert_eq!(t.metrics.by_endpoint.len(), 2);
        assert_eq!(&*t.metrics.by_endpoint[1].labels.endpoint, "127.0.0.1:9004");
        // The endpoint that stayed keeps its runtime state; the one removed drains, and its
        // series are gone.
        assert!(Arc::ptr_eq(
            &before.pools["b"].endpoints[1],
            &after.pools["b"].endpoints[0]
        ));
        assert!(before.pools["b"].endpoints[0].is_draining());
        // Out of order (not what the model makes, but found all the same): same runtimes,
        // nothing drains.
        let mut reordered = (*after.config).clone();
        reordered.pools.get_mut("b").unwrap().endpoints.reverse();
        proxy.update_pools(&Arc::new(reordered), &["b".to_owned()].into());
        let last = proxy.shared.snapshot.load_full();
        for (i, ep) in last.pools["b"].endpoints.iter().enumerate() {
            assert!(Arc::ptr_eq(ep, &after.pools["b"].endpoints[1 - i]));
            assert!(!ep.is_draining());
        }

        let installed = proxy.installed.lock().unwrap();
        assert!(installed
            .registry
            .series
            .keys()
            .all(|l| &*l.endpoint != "127.0.0.1:9002"));
        assert!(installed
            .registry
            .series
            .keys()
            .any(|l| &*l.endpoint == "127.0.0.1:9004"));
    }
}
