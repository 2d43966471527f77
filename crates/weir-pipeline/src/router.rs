//! The routing table of one HTTP listener: host first (exact, then the longest
//! `*.suffix`, then routes without a host), then the longest `path_prefix`
//! within that host; the listener's default pool when nothing matches.

use std::collections::HashMap;
use std::sync::Arc;

use weir_config::HostMatch;

use weir_http::counts::Counts;
use weir_metrics::hist::Histogram;
use weir_upstream::pool::PoolRt;

/// Where a matched request goes.
#[derive(Debug, Clone)]
pub struct Target {
    /// The route's name, or `None` for the listener's default pool.
    pub route: Option<Arc<str>>,
    pub pool: Arc<PoolRt>,
    pub metrics: TargetMetrics,
    /// `hsts`: the `Strict-Transport-Security` value for answers over TLS.
    pub hsts: Option<http::HeaderValue>,
    /// The route's filters, its `https_redirect` first (empty for none, and for a listener's
    /// default pool).
    pub filters: weir_filters::Chain,
}

impl Target {
    pub fn pool_name(&self) -> &str {
        &self.pool.name
    }
}

/// The counters a request through this target lands in.
#[derive(Debug, Clone)]
pub struct TargetMetrics {
    /// Aligned with `pool.endpoints`.
    pub by_endpoint: Arc<[Arc<Counts>]>,
    /// For requests that never reached an endpoint.
    pub no_endpoint: Arc<Counts>,
    /// Request duration for this listener, route and pool.
    pub duration: Arc<Histogram>,
}

#[derive(Debug, Default, Clone)]
struct Paths {
    /// Sorted by prefix length, longest first, so the first match is the longest.
    entries: Vec<(Box<str>, Arc<Target>)>,
}

impl Paths {
    fn insert(&mut self, prefix: &str, target: Target) {
        self.entries.push((prefix.into(), Arc::new(target)));
        self.entries.sort_by_key(|e| std::cmp::Reverse(e.0.len()));
    }

    fn lookup(&self, path: &str) -> Option<&Arc<Target>> {
        self.entries
            .iter()
            .find(|(p, _)| path.starts_with(&**p))
            .map(|(_, t)| t)
    }
}

#[derive(Debug, Default, Clone)]
pub struct RouteTable {
    exact: HashMap<Box<str>, Paths>,
    /// `(".foo.com", paths)`, longest suffix first.
    suffixes: Vec<(Box<str>, Paths)>,
    any_host: Paths,
    default: Option<Arc<Target>>,
}

impl RouteTable {
    pub fn new(default: Option<Target>) -> Self {
        RouteTable {
            default: default.map(Arc::new),
            ..Default::default()
        }
    }

    pub fn insert(&mut self, host: Option<&HostMatch>, path_prefix: &str, target: Target) {
        match host {
            None => self.any_host.insert(path_prefix, target),
            Some(HostMatch::Exact(h)) => self
                .exact
                .entry(h.as_str().into())
                .or_default()
                .insert(path_prefix, target),
            Some(HostMatch::Suffix(s)) => {
                match self.suffixes.iter_mut().find(|(k, _)| **k == **s) {
                    Some((_, paths)) => paths.insert(path_prefix, target),
                    None => {
                        let mut paths = Paths::default();
                        paths.insert(path_prefix, target);
                        self.suffixes.push((s.as_str().into(), paths));
                        self.suffixes.sort_by_key(|e| std::cmp::Reverse(e.0.len()));
                    }
                }
            }
        }
    }

    /// Every target in the table (the default included), for metrics.
    pub fn targets(&self) -> impl Iterator<Item = &Target> {
        self.exact
            .values()
            .chain(self.suffixes.iter().map(|(_, p)| p))
            .chain(std::iter::once(&self.any_host))
            .flat_map(|p| p.entries.iter().map(|(_, t)| &**t))
            .chain(self.default.as_deref())
    }

    /// Every target, to repoint (`pool_update.rs`); the lookup order does not change.
    pub fn targets_mut(&mut self) -> impl Iterator<Item = &mut Arc<Target>> {
        self.exact
            .values_mut()
            .chain(self.suffixes.iter_mut().map(|(_, p)| p))
            .chain(std::iter::once(&mut self.any_host))
            .flat_map(|p| p.entries.iter_mut().map(|(_, t)| t))
            .chain(self.default.iter_mut())
    }

    /// `host` as the client sent it (any case, maybe with a port); `path`
    /// without the query. A request holds the target it found (one shared count, where
    /// cloning its parts was seven, each an atomic operation to take and one to drop).
    pub fn lookup(&self, host: Option<&str>, path: &str) -> Option<&Arc<Target>> {
        if let Some(host) = host.map(strip_port) {
            let lowered;
            let host = if host.bytes().any(|b| b.is_ascii_uppercase()) {
                lowered = host.to_ascii_lowercase();
                lowered.as_str()
            } else {
                host
            };
            let host = host.strip_suffix('.').unwrap_or(host);
            if let Some(t) = self.exact.get(host).and_then(|p| p.lookup(path)) {
                return Some(t);
            }
            for (suffix, paths) in &self.suffixes {
                if host.len() > suffix.len() && host.ends_with(&**suffix) {
                    if let Some(t) = paths.lookup(path) {
                        return Some(t);
                    }
                }
            }
        }
        self.any_host.lookup(path).or(self.default.as_ref())
    }
}

/// `example.com:8080` → `example.com`; `[::1]:8080` → `[::1]`.
fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return match host.find(']') {
            Some(i) => &host[..=i],
            None => host,
        };
    }
    match host.rfind(':') {
        Some(i) => &host[..i],
        None => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_upstream::pool::PoolRt;

    fn metrics() -> TargetMetrics {
        let labels = weir_http::counts::Labels {
            listener: "l".into(),
            route: "".into(),
            pool: "".into(),
            endpoint: "".into(),
        };
        TargetMetrics {
            by_endpoint: Arc::new([]),
            no_endpoint: Arc::new(Counts::new(labels)),
            duration: Default::default(),
        }
    }

    /// A pool with default settings and no endpoints.
    fn empty_pool(name: &str) -> PoolRt {
        let cfg = weir_config::Pool::default();
        PoolRt::new(name.into(), &cfg, Vec::new(), Default::default(), None)
    }

    fn target(name: &str) -> Target {
        Target {
            route: Some(name.into()),
            pool: Arc::new(empty_pool(name)),
            metrics: metrics(),
            hsts: None,
            filters: Default::default(),
        }
    }

    fn route_of<'a>(t: &'a RouteTable, host: Option<&str>, path: &str) -> Option<&'a str> {
        t.lookup(host, path).and_then(|t| t.route.as_deref())
    }

    #[test]
    fn host_then_longest_prefix() {
        let mut t = RouteTable::new(None);
        t.insert(Some(&HostMatch::Exact("a.com".into())), "/", target("a"));
        t.insert(
            Some(&HostMatch::Exact("a.com".into())),
            "/api",
            target("a-api"),
        );
        t.insert(Some(&HostMatch::Suffix(".b.com".into())), "/", target("b"));
        t.insert(None, "/", target("any"));
        assert_eq!(route_of(&t, Some("a.com"), "/x"), Some("a"));
        assert_eq!(route_of(&t, Some("A.com:8080"), "/api/v1"), Some("a-api"));
        assert_eq!(route_of(&t, Some("x.b.com"), "/"), Some("b"));
        assert_eq!(route_of(&t, Some("b.com"), "/"), Some("any"));
        assert_eq!(route_of(&t, None, "/"), Some("any"));
    }

    #[test]
    fn falls_back_to_default_pool() {
        let mut t = RouteTable::new(Some(Target {
            route: None,
            pool: Arc::new(empty_pool("d")),
            metrics: metrics(),
            hsts: None,
            filters: Default::default(),
        }));
        t.insert(Some(&HostMatch::Exact("a.com".into())), "/api", target("a"));
        let hit = t.lookup(Some("a.com"), "/other").unwrap();
        assert!(hit.route.is_none());
        assert_eq!(&*hit.pool.name, "d");
    }

    #[test]
    fn ports_and_ipv6() {
        assert_eq!(strip_port("[::1]:80"), "[::1]");
        assert_eq!(strip_port("a.com:80"), "a.com");
        assert_eq!(strip_port("a.com"), "a.com");
    }
}
