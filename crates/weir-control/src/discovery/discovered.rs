//! The endpoint sets the sources sent, by pool, and the config the data plane runs made of
//! them: each pool's own endpoints (the config's), then those discovered for it.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use weir_config::{Config, Endpoint};

use super::source::EndpointSet;

/// The config's bounds on an endpoint's weight (`[[pools.NAME.endpoints]] weight`).
const WEIGHTS: std::ops::RangeInclusive<u32> = 1..=1000;

#[derive(Debug, Default)]
pub struct Discovered {
    /// By pool, then source: the last set each sent, in address order.
    sets: BTreeMap<String, BTreeMap<&'static str, Vec<Endpoint>>>,
}

impl Discovered {
    /// Takes `set` as what `source` now says of its pool; whether that changed anything.
    pub fn take(&mut self, source: &'static str, set: EndpointSet) -> bool {
        let endpoints = tidy(set.endpoints);
        let by_source = self.sets.entry(set.pool.clone()).or_default();
        let changed = match endpoints.is_empty() {
            true => by_source.remove(source).is_some(),
            false => by_source.insert(source, endpoints.clone()).as_ref() != Some(&endpoints),
        };
        if by_source.is_empty() {
            self.sets.remove(&set.pool);
        }
        changed
    }

    /// How many endpoints the sources give `pool`, before merging with the config's.
    pub fn count(&self, pool: &str) -> usize {
        self.sets
            .get(pool)
            .map_or(0, |s| s.values().map(Vec::len).sum())
    }

    /// `config` as the data plane runs it: each pool's endpoints followed by those
    /// discovered for it that the config does not list itself (the config's weight stands
    /// for an address both give). Itself when nothing was discovered.
    pub fn merge(&self, config: &Arc<Config>) -> Arc<Config> {
        if self.sets.is_empty() {
            return config.clone();
        }
        let mut next = (**config).clone();
        for (pool, by_source) in &self.sets {
            let Some(p) = next.pools.get_mut(pool) else {
                continue;
            };
            let mut seen: HashSet<_> = p.endpoints.iter().map(|e| e.addr).collect();
            for e in by_source.values().flatten() {
                if seen.insert(e.addr) {
                    p.endpoints.push(e.clone());
                }
            }
        }
        Arc::new(next)
    }
}

/// A set as the config would hold it: each address once, in order, with a weight the
/// config accepts (a source's weight of 0 or 65,535 is its own scale's, not a refusal).
fn tidy(mut endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
    for e in &mut endpoints {
        e.weight = e.weight.clamp(*WEIGHTS.start(), *WEIGHTS.end());
    }
    endpoints.sort_by_key(|e| e.addr.to_string());
    endpoints.dedup_by_key(|e| e.addr);
    endpoints
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(addr: &str, weight: u32) -> Endpoint {
        Endpoint {
            addr: addr.parse().unwrap(),
            weight,
        }
    }

    fn set(pool: &str, endpoints: Vec<Endpoint>) -> EndpointSet {
        EndpointSet {
            pool: pool.into(),
            endpoints,
        }
    }

    fn config(pools: &[(&str, Vec<Endpoint>)]) -> Arc<Config> {
        let parse = |text| weir_config::parse_str(text, "test").unwrap().config;
        let mut c = parse("");
        for (name, endpoints) in pools {
            let mut p = parse("[pools.p]\n").pools["p"].clone();
            p.endpoints = endpoints.clone();
            c.pools.insert(name.to_string(), p);
        }
        Arc::new(c)
    }

    #[test]
    fn a_set_replaces_what_its_source_sent_and_only_a_change_counts() {
        let mut d = Discovered::default();
        assert!(d.take(
            "dns",
            set("a", vec![ep("10.0.0.2:80", 1), ep("10.0.0.1:80", 1)])
        ));
        // The same set in another order is no change.
        assert!(!d.take(
            "dns",
            set("a", vec![ep("10.0.0.1:80", 1), ep("10.0.0.2:80", 1)])
        ));
        assert!(d.take("k8s", set("a", vec![ep("10.0.0.3:80", 1)])));
        assert_eq!(d.count("a"), 3);
        assert!(d.take("dns", set("a", vec![ep("10.0.0.1:80", 1)])));
        assert_eq!(d.count("a"), 2);
        assert!(d.take("dns", set("a", vec![])));
        assert!(d.take("k8s", set("a", vec![])));
        assert!(!d.take("k8s", set("a", vec![])));
        assert!(d.sets.is_empty());
    }

    #[test]
    fn merged_endpoints_follow_the_configs_own_and_weights_are_kept_in_bounds() {
        let mut d = Discovered::default();
        let running = config(&[("a", vec![ep("10.0.0.1:80", 5)]), ("b", vec![])]);
        assert!(Arc::ptr_eq(&d.merge(&running), &running));
        d.take(
            "dns",
            set(
                "a",
                vec![
                    ep("10.0.0.9:80", 0),
                    ep("10.0.0.1:80", 1),
                    ep("10.0.0.9:80", 7),
                ],
            ),
        );
        d.take("dns", set("gone", vec![ep("10.0.0.4:80", 1)]));
        let merged = d.merge(&running);
        assert_eq!(
            merged.pools["a"].endpoints,
            vec![ep("10.0.0.1:80", 5), ep("10.0.0.9:80", 1)]
        );
        assert!(merged.pools["b"].endpoints.is_empty());
        assert!(!merged.pools.contains_key("gone"));
        d.take("dns", set("b", vec![ep("10.0.0.5:80", 70_000)]));
        assert_eq!(
            d.merge(&running).pools["b"].endpoints,
            vec![ep("10.0.0.5:80", 1000)]
        );
    }
}
