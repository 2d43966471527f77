//! The running config as API resources, kept typed: each resource is read from its JSON
//! spec once, by the same readers a config file goes through (`walk.rs`, over the tree of
//! `json.rs`), and kept until it changes; every change then re-runs only the rules that span
//! resources (`validate.rs`) on the typed model. A change costs its own reading plus those
//! whole-model checks, however large the config is.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Range;
use std::time::SystemTime;

use serde_json::Value;

use crate::certificate::{CertificateAt, Dates};
use crate::diagnostic::{Omitted, MAX_DIAGNOSTICS};
use crate::json::{self, Paths};
use crate::model::{Admin, CertificateResource, Config, Endpoint, Global, Listener, Pool, Route};
use crate::read::{self, Sink};
use crate::walk::{self, Listed, ListenerAt, PoolAt, RouteAt, Walked};

/// What a resource is (the admin API's kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ResourceKind {
    Listener,
    Route,
    Pool,
    /// Named `POOL/ADDR`: an `IP:PORT`, a `HOST:PORT` or an SRV name.
    Endpoint,
    Certificate,
    /// `[filters.NAME]`: a step routes chain by name.
    Filter,
}

/// One resource written (`Some(spec)`) or deleted (`None`).
#[derive(Debug, Clone, Copy)]
pub struct ResourceChange<'a> {
    pub kind: ResourceKind,
    pub name: &'a str,
    pub spec: Option<&'a Value>,
}

/// A problem with a change, at the field it is about (`pools/app/health/timeout`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    pub field: Option<String>,
    pub message: String,
}

/// The typed resources and where each field came from.
pub struct Resources {
    walked: Walked,
    paths: Paths,
    /// Each resource's field paths in `paths`, dropped when it is read again.
    ranges: HashMap<(ResourceKind, String), Range<usize>>,
    /// By pool, then address as named: a pool's endpoints are resources of their own.
    endpoints: HashMap<String, BTreeMap<String, Listed>>,
    /// What a certificate outside its dates is when read.
    dates: Dates,
}

/// A resource's typed value before a change, to put back if the change is refused.
enum Saved {
    Listener(Option<(Listener, ListenerAt)>),
    Route(Option<(Route, RouteAt)>),
    Pool(Option<Box<(Pool, PoolAt)>>),
    Endpoint(Option<Listed>),
    Certificate(Option<Box<(CertificateResource, CertificateAt)>>),
    Filter(Option<(Option<crate::filter::Filter>, crate::filter::FilterAt)>),
}

impl Resources {
    /// No resources; `admin` and `global` come from the process (the file's `[admin]`, or
    /// `--admin` with the store) and take part in the checks (a listener may not bind the
    /// admin address).
    pub fn new(admin: Admin, global: Global) -> Resources {
        let mut walked = walk::empty();
        walked.config.admin = admin;
        walked.config.global = global;
        Resources {
            walked,
            paths: Paths::default(),
            ranges: HashMap::new(),
            endpoints: HashMap::new(),
            dates: Dates::Refuse,
        }
    }

    /// Whether a certificate outside its dates is only a warning, not an error (it is an
    /// error by default). For reading what is already stored (a start, a rebuild): a
    /// certificate that expired since it was written must not keep weir from starting;
    /// one written through a change must be valid.
    pub fn tolerate_expired(&mut self, yes: bool) {
        self.dates = if yes { Dates::Warn } else { Dates::Refuse };
    }

    /// The validated config.
    pub fn config(&self) -> &Config {
        &self.walked.config
    }

    /// Replaces the process settings (a reloaded file's `[admin]` and `[global]`).
    pub fn set_settings(&mut self, admin: Admin, global: Global) {
        self.walked.config.admin = admin;
        self.walked.config.global = global;
    }

    /// Makes `changes`, in order, and checks the result as a whole. On any problem nothing
    /// changes and every problem found is returned (at most [`MAX_DIAGNOSTICS`], then a count).
    pub fn apply(&mut self, changes: &[ResourceChange<'_>]) -> Result<(), Vec<FieldProblem>> {
        let mut sink = Sink::for_fields();
        let mut undo = Vec::with_capacity(changes.len());
        let mut pools = BTreeSet::new();
        for c in changes {
            let key = (c.kind, c.name.to_owned());
            let old_range = self.ranges.remove(&key);
            let saved = self.take(c.kind, c.name);
            undo.push((key.clone(), saved, old_range));
            if let Some(spec) = c.spec {
                let start = self.paths.mark();
                self.read(&mut sink, c.kind, c.name, spec);
                self.ranges.insert(key, self.paths.since(start));
            }
            match c.kind {
                ResourceKind::Pool => pools.insert(c.name.to_owned()),
                ResourceKind::Endpoint => pools.insert(pool_of(c.name).0.to_owned()),
                _ => false,
            };
        }
        for p in &pools {
            self.sync_endpoints(p);
        }
        crate::validate::check(&mut sink, &self.walked);
        let mut problems: Vec<FieldProblem> = sink
            .finish_fields(|k| self.paths.get(k))
            .into_iter()
            .map(|(field, message)| FieldProblem { field, message })
            .collect();
        if problems.is_empty() {
            for (_, _, old) in undo {
                if let Some(r) = old {
                    self.paths.drop_range(r);
                }
            }
            return Ok(());
        }
        for (key, saved, old) in undo.into_iter().rev() {
            if let Some(r) = self.ranges.remove(&key) {
                self.paths.drop_range(r);
            }
            self.take(key.0, &key.1);
            self.restore(&key.1, saved);
            if let Some(r) = old {
                self.ranges.insert(key, r);
            }
        }
        for p in &pools {
            self.sync_endpoints(p);
        }
        if problems.len() > MAX_DIAGNOSTICS {
            let more = Omitted {
                errors: problems.len() - MAX_DIAGNOSTICS,
                warnings: 0,
            };
            problems.truncate(MAX_DIAGNOSTICS);
            problems.push(FieldProblem {
                field: None,
                message: more.to_string(),
            });
        }
        Err(problems)
    }

    /// Reads one resource's spec with the file's readers, at its field paths.
    fn read(&mut self, sink: &mut Sink<'_>, kind: ResourceKind, name: &str, spec: &Value) {
        let w = &mut self.walked;
        let paths = &mut self.paths;
        let (section, what) = match kind {
            ResourceKind::Listener => ("listeners", "listener"),
            ResourceKind::Route => ("routes", "route"),
            ResourceKind::Pool => ("pools", "pool"),
            ResourceKind::Certificate => ("certificates", "certificate"),
            ResourceKind::Filter => ("filters", "filter"),
            ResourceKind::Endpoint => {
                let (pool, addr) = pool_of(name);
                let path = format!("pools/{pool}/endpoints/{addr}");
                let list = paths.node(format!("pools/{pool}/endpoints"));
                // The address is the resource's name; a lease's ttl is not a config key.
                let mut spec = spec.as_object().cloned().unwrap_or_default();
                spec.remove("ttl");
                spec.insert(name_key(addr).into(), Value::String(addr.to_owned()));
                let spec = Value::Object(spec);
                let mut nums = json::Numbers::new();
                json::numbers(&spec, &mut nums);
                let item = json::tree(&spec, &nums, &path, paths);
                let list = json::array(list, item.into_iter().collect());
                if let Some(e) = walk::endpoints(sink, pool, &list).pop() {
                    self.endpoints
                        .entry(pool.to_owned())
                        .or_default()
                        .insert(addr.to_owned(), e);
                }
                return;
            }
        };
        let path = format!("{section}/{name}");
        let name_span = paths.node(path.clone());
        walk::check_name(sink, name, name_span.clone(), what);
        let mut nums = json::Numbers::new();
        json::numbers(spec, &mut nums);
        let Some(node) = json::tree(spec, &nums, &path, paths) else {
            return;
        };
        let Some(t) = read::table(sink, &node) else {
            return;
        };
        match kind {
            ResourceKind::Listener => {
                let (l, at) = walk::listener(sink, name, &t);
                w.config.listeners.insert(name.to_owned(), l);
                w.listeners.insert(name.to_owned(), at);
            }
            ResourceKind::Route => {
                let (r, at) = walk::route(sink, name, name_span, &t);
                w.config.routes.insert(name.to_owned(), r);
                w.routes.insert(name.to_owned(), at);
            }
            ResourceKind::Pool => {
                let (p, at) = walk::pool(sink, name, &t);
                w.config.pools.insert(name.to_owned(), p);
                w.pools.insert(name.to_owned(), at);
            }
            ResourceKind::Certificate => {
                let (c, at) =
                    crate::certificate::read(sink, name, &t, SystemTime::now(), self.dates);
                w.config.certificates.insert(name.to_owned(), c);
                w.certificates.insert(name.to_owned(), at);
            }
            ResourceKind::Filter => {
                let (f, at) = crate::filter::read(sink, name, &t);
                if let Some(f) = f {
                    w.config.filters.insert(name.to_owned(), f);
                }
                w.filters.insert(name.to_owned(), at);
            }
            ResourceKind::Endpoint => unreachable!("read above"),
        }
    }

    /// Removes a resource's typed value, returning it.
    fn take(&mut self, kind: ResourceKind, name: &str) -> Saved {
        let w = &mut self.walked;
        match kind {
            ResourceKind::Listener => Saved::Listener(
                w.config
                    .listeners
                    .remove(name)
                    .zip(w.listeners.remove(name)),
            ),
            ResourceKind::Route => {
                Saved::Route(w.config.routes.remove(name).zip(w.routes.remove(name)))
            }
            ResourceKind::Pool => Saved::Pool(
                w.config
                    .pools
                    .remove(name)
                    .zip(w.pools.remove(name))
                    .map(Box::new),
            ),
            ResourceKind::Endpoint => {
                let (pool, addr) = pool_of(name);
                Saved::Endpoint(self.endpoints.get_mut(pool).and_then(|m| m.remove(addr)))
            }
            ResourceKind::Certificate => Saved::Certificate(
                w.config
                    .certificates
                    .remove(name)
                    .zip(w.certificates.remove(name))
                    .map(Box::new),
            ),
            ResourceKind::Filter => {
                let f = w.config.filters.remove(name);
                Saved::Filter(w.filters.remove(name).map(|at| (f, at)))
            }
        }
    }

    fn restore(&mut self, name: &str, saved: Saved) {
        let w = &mut self.walked;
        let name = name.to_owned();
        match saved {
            Saved::Listener(Some((l, at))) => {
                w.config.listeners.insert(name.clone(), l);
                w.listeners.insert(name, at);
            }
            Saved::Route(Some((r, at))) => {
                w.config.routes.insert(name.clone(), r);
                w.routes.insert(name, at);
            }
            Saved::Pool(Some(b)) => {
                let (p, at) = *b;
                w.config.pools.insert(name.clone(), p);
                w.pools.insert(name, at);
            }
            Saved::Certificate(Some(b)) => {
                let (c, at) = *b;
                w.config.certificates.insert(name.clone(), c);
                w.certificates.insert(name, at);
            }
            Saved::Filter(Some((f, at))) => {
                if let Some(f) = f {
                    w.config.filters.insert(name.clone(), f);
                }
                w.filters.insert(name, at);
            }
            Saved::Endpoint(Some(e)) => {
                let (pool, addr) = pool_of(&name);
                self.endpoints
                    .entry(pool.to_owned())
                    .or_default()
                    .insert(addr.to_owned(), e);
            }
            _ => {}
        }
    }

    /// A pool's endpoints in the model, in name order (as a file that lists them sorted).
    fn sync_endpoints(&mut self, pool: &str) {
        let mut list: Vec<Endpoint> = Vec::new();
        let mut named = Vec::new();
        let mut spans = Vec::new();
        for e in self
            .endpoints
            .get(pool)
            .into_iter()
            .flat_map(|m| m.values())
        {
            match e {
                Listed::Addr(e) => list.push(e.clone()),
                Listed::Named(e, span) => {
                    named.push(e.clone());
                    spans.push(span.clone());
                }
            }
        }
        if list.is_empty() && named.is_empty() {
            self.endpoints.remove(pool);
        }
        if let Some(p) = self.walked.config.pools.get_mut(pool) {
            p.endpoints = list;
            p.named = named;
        }
        if let Some(at) = self.walked.pools.get_mut(pool) {
            at.named = spans;
        }
    }
}

/// The key an endpoint resource's name is read as: an SRV name has no port.
fn name_key(addr: &str) -> &'static str {
    match addr.starts_with('_') && !addr.contains(':') {
        true => "srv",
        false => "addr",
    }
}

/// `POOL/ADDR` → (POOL, ADDR).
fn pool_of(name: &str) -> (&str, &str) {
    name.split_once('/').unwrap_or((name, ""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use ResourceKind::*;

    fn put<'a>(kind: ResourceKind, name: &'a str, spec: &'a Value) -> ResourceChange<'a> {
        ResourceChange {
            kind,
            name,
            spec: Some(spec),
        }
    }

    fn fields(r: Result<(), Vec<FieldProblem>>) -> Vec<String> {
        r.unwrap_err()
            .into_iter()
            .map(|p| p.field.unwrap_or_default())
            .collect()
    }

    #[test]
    fn problems_name_the_field_as_the_file_rules_find_them() {
        let mut r = Resources::new(Admin::default(), Global::default());
        let pool = json!({"max_conn": 2});
        r.apply(&[put(Pool, "app", &pool)]).unwrap();
        for (spec, field) in [
            (json!({"max_conn": -1}), "pools/app/max_conn"),
            (json!({"max_conn": 2, "max_qeue": 3}), "pools/app/max_qeue"),
            (
                json!({"health": {"check": "http", "interval": "1s", "timeout": "2s"}}),
                "pools/app/health/timeout",
            ),
            (json!({"balance": "fastest"}), "pools/app/balance"),
            (
                json!({"hash_balance_factor": 0.5}),
                "pools/app/hash_balance_factor",
            ),
            (
                json!({"retry": {"on_status": [502, 404]}}),
                "pools/app/retry/on_status",
            ),
        ] {
            assert_eq!(
                fields(r.apply(&[put(Pool, "app", &spec)])),
                [field],
                "{spec}"
            );
        }
        // Refused changes left nothing behind.
        assert_eq!(r.config().pools["app"].max_conn, 2);
        let route = json!({"listener": "web", "pool": "app"});
        assert_eq!(
            fields(r.apply(&[put(Route, "r", &route)])),
            ["routes/r/listener"]
        );
        let ep = json!({"weight": 0, "ttl": "5s"});
        assert_eq!(
            fields(r.apply(&[put(Endpoint, "app/127.0.0.1:9", &ep)])),
            ["pools/app/endpoints/127.0.0.1:9/weight"]
        );
        let ep = json!({"weight": 3});
        r.apply(&[put(Endpoint, "app/127.0.0.1:9", &ep)]).unwrap();
        assert_eq!(r.config().pools["app"].endpoints[0].weight, 3);
        // A pool read again keeps its endpoints.
        let pool = json!({"max_conn": 5});
        r.apply(&[put(Pool, "app", &pool)]).unwrap();
        assert_eq!(r.config().pools["app"].endpoints.len(), 1);
        // Two listeners on one address: the one written later is blamed.
        let a = json!({"bind": "127.0.0.1:8080", "pool": "app"});
        r.apply(&[put(Listener, "b", &a)]).unwrap();
        assert_eq!(
            fields(r.apply(&[put(Listener, "a", &a)])),
            ["listeners/a/bind"]
        );
        assert!(!r.config().listeners.contains_key("a"));
    }
}
