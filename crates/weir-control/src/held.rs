//! Stored resources that do not validate, held back while the rest runs.
//!
//! A store that others write too (etcd: anyone with access to its prefix) can hold a
//! resource weir would never have committed: a route to a pool that does not exist,
//! written by hand. Refusing the whole stored config for it would leave every replica on
//! what it ran before, refuse every later write through the API (each is validated with
//! what the store holds), and keep a restarted replica from starting. Instead such a
//! resource is *held back*: the replica runs the stored config without it (with its last
//! valid version, if it had one), and the API shows it, with why, so that it can be fixed
//! or deleted through the API like any other. A held resource is tried again with every
//! change, so it runs as soon as it validates (its pool added, say).
//!
//! A change's own resources are never held back: a write that does not validate is
//! refused (422) as always. Only what the change did not write is: what others wrote.

use std::collections::{BTreeMap, BTreeSet};

use weir_config::Resources;
use weir_store::{Kind, State, Versioned};

use crate::compile::{self, Invalid};

/// A stored resource held back: what runs in its place, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldBack {
    /// Its last version that validated, which runs meanwhile; none if it never ran.
    pub running: Option<Versioned>,
    pub why: Invalid,
}

/// The resources held back, by kind and name.
pub type Held = BTreeMap<(Kind, String), HeldBack>;

/// What [`admit`] took.
pub struct Admitted {
    /// The resources that run as stored now (the change's and what else it took).
    pub taken: Vec<(Kind, String)>,
    pub held: Held,
}

/// Takes `stored` into `model`, which holds `running`: the resources `must` (a change's)
/// must validate, else nothing more is tried and the answer is why; every other resource
/// in which the two differ is taken as far as it validates, the rest held back. `taken`
/// is set once `model` changed.
pub fn admit(
    model: &mut Resources,
    running: &State,
    stored: &State,
    must: &[(Kind, String)],
    taken: &mut bool,
) -> Result<Admitted, Invalid> {
    let must: BTreeSet<(Kind, String)> = must.iter().cloned().collect();
    let others: Vec<(Kind, String)> = differ(running, stored)
        .into_iter()
        .filter(|k| !must.contains(k))
        .collect();
    let all: Vec<(Kind, String)> = must.iter().cloned().chain(others.clone()).collect();
    // Almost always: everything validates at once.
    match compile::check(model, stored, &all) {
        Ok(()) => {
            *taken = true;
            return Ok(Admitted {
                taken: all,
                held: Held::new(),
            });
        }
        Err(e) if others.is_empty() => return Err(e),
        Err(_) => {}
    }
    // The config as it runs while resources are taken one by one.
    let mut effective = running.clone();
    effective.revision = stored.revision;
    let mut pending = others;
    let mut why = BTreeMap::new();
    let mut took = Vec::new();
    // What others wrote, in passes until none is taken (one may need another first: a
    // route its pool).
    take_each(
        model,
        &mut effective,
        stored,
        &mut pending,
        &mut why,
        &mut took,
        taken,
    );
    let must: Vec<(Kind, String)> = must.into_iter().collect();
    if !must.is_empty() {
        for k in &must {
            set(&mut effective, stored, k);
        }
        compile::check(model, &effective, &must)?;
        *taken = true;
        took.extend(must);
        // The change may be what a held resource lacked.
        take_each(
            model,
            &mut effective,
            stored,
            &mut pending,
            &mut why,
            &mut took,
            taken,
        );
    }
    // Several that only validate together (two listeners swapping ports).
    if pending.len() > 1 {
        for k in &pending {
            set(&mut effective, stored, k);
        }
        if compile::check(model, &effective, &pending).is_ok() {
            *taken = true;
            took.append(&mut pending);
        }
    }
    let held = pending
        .into_iter()
        .map(|k| {
            let running = running.resources.get(&k).cloned();
            let why = why.remove(&k).unwrap_or_else(|| Invalid(Vec::new()));
            (k, HeldBack { running, why })
        })
        .collect();
    Ok(Admitted { taken: took, held })
}

/// Holds back `k` after all: it validated, but this replica cannot run it (its port is
/// taken here). The model takes its running version again; false if that does not validate
/// either (something taken with it needs it), and then nothing changed.
pub fn hold(
    model: &mut Resources,
    running: &State,
    stored: &State,
    held: &mut Held,
    k: (Kind, String),
    why: Invalid,
) -> bool {
    let mut more = held.clone();
    let back = HeldBack {
        running: running.resources.get(&k).cloned(),
        why,
    };
    more.insert(k.clone(), back);
    let effective = self::running(stored, &more);
    if compile::check(model, &effective, std::slice::from_ref(&k)).is_err() {
        return false;
    }
    *held = more;
    true
}

/// The resource a problem's field names: `listeners/web/bind` is listener `web`.
pub fn resource_of(field: &str) -> Option<(Kind, String)> {
    let mut parts = field.splitn(3, '/');
    let kind = match parts.next()? {
        "listeners" => Kind::Listener,
        "routes" => Kind::Route,
        "pools" => Kind::Pool,
        "certificates" => Kind::Certificate,
        "filters" => Kind::Filter,
        _ => return None,
    };
    let name = parts.next().filter(|n| !n.is_empty())?;
    Some((kind, name.to_string()))
}

/// Takes each of `pending` that validates on its own, in passes until a pass takes none.
fn take_each(
    model: &mut Resources,
    effective: &mut State,
    stored: &State,
    pending: &mut Vec<(Kind, String)>,
    why: &mut BTreeMap<(Kind, String), Invalid>,
    took: &mut Vec<(Kind, String)>,
    taken: &mut bool,
) {
    loop {
        let before = pending.len();
        pending.retain(|k| {
            let was = effective.resources.get(k).cloned();
            set(effective, stored, k);
            match compile::check(model, effective, std::slice::from_ref(k)) {
                Ok(()) => {
                    *taken = true;
                    took.push(k.clone());
                    why.remove(k);
                    false
                }
                Err(e) => {
                    match was {
                        Some(v) => effective.resources.insert(k.clone(), v),
                        None => effective.resources.remove(k),
                    };
                    why.insert(k.clone(), e);
                    true
                }
            }
        });
        if pending.len() == before || pending.is_empty() {
            return;
        }
    }
}

/// Sets `k` in `effective` to what `stored` has (or removes it).
fn set(effective: &mut State, stored: &State, k: &(Kind, String)) {
    match stored.resources.get(k) {
        Some(v) => effective.resources.insert(k.clone(), v.clone()),
        None => effective.resources.remove(k),
    };
}

/// The config that runs: `stored` with each held resource's running version instead.
pub fn running(stored: &State, held: &Held) -> State {
    let mut state = stored.clone();
    for (k, h) in held {
        match &h.running {
            Some(v) => state.resources.insert(k.clone(), v.clone()),
            None => state.resources.remove(k),
        };
    }
    state
}

/// The resources in which `a` and `b` differ.
pub fn differ(a: &State, b: &State) -> Vec<(Kind, String)> {
    let changed = a
        .resources
        .iter()
        .filter(|(k, v)| b.resources.get(*k) != Some(*v))
        .map(|(k, _)| k.clone());
    let added = b
        .resources
        .keys()
        .filter(|k| !a.resources.contains_key(*k))
        .cloned();
    changed.chain(added).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn state(items: &[(Kind, &str, serde_json::Value)]) -> State {
        let mut s = State::default();
        for (i, (k, n, v)) in items.iter().enumerate() {
            s.resources.insert(
                (*k, n.to_string()),
                Versioned {
                    version: i as u64 + 1,
                    body: Arc::new(v.clone()),
                },
            );
        }
        s
    }

    fn model(s: &State) -> Resources {
        compile::model(s, "").unwrap()
    }

    #[test]
    fn what_others_wrote_is_taken_as_far_as_it_validates() {
        let running = state(&[(Kind::Pool, "app", json!({}))]);
        let mut m = model(&running);
        let mut stored = running.clone();
        for (k, n, v) in [
            (
                Kind::Route,
                "ghost",
                json!({"listener": "web", "pool": "missing"}),
            ),
            (
                Kind::Listener,
                "web",
                json!({"bind": "127.0.0.1:0", "pool": "app"}),
            ),
            (Kind::Pool, "more", json!({})),
        ] {
            stored.resources.insert(
                (k, n.into()),
                Versioned {
                    version: 9,
                    body: Arc::new(v),
                },
            );
        }
        let mut taken = false;
        let a = admit(&mut m, &running, &stored, &[], &mut taken).unwrap();
        assert!(taken);
        assert_eq!(a.held.len(), 1, "{:?}", a.held);
        let h = &a.held[&(Kind::Route, "ghost".to_string())];
        assert_eq!(h.running, None);
        assert_eq!(h.why.0[0].field.as_deref(), Some("routes/ghost/pool"));
        assert!(m.config().pools.contains_key("more"));
        assert!(m.config().listeners.contains_key("web"));
        assert!(!m.config().routes.contains_key("ghost"));
        // What runs: the stored config without the route.
        let r = super::running(&stored, &a.held);
        assert!(r.get(Kind::Route, "ghost").is_none());
        assert!(r.get(Kind::Pool, "more").is_some());
    }

    #[test]
    fn a_field_names_its_resource() {
        assert_eq!(
            resource_of("listeners/web/bind"),
            Some((Kind::Listener, "web".into()))
        );
        assert_eq!(
            resource_of("pools/app/tls"),
            Some((Kind::Pool, "app".into()))
        );
        assert_eq!(resource_of("filters/f"), Some((Kind::Filter, "f".into())));
        assert_eq!(resource_of("nothing/x"), None);
        assert_eq!(resource_of("routes/"), None);
    }

    #[test]
    fn a_change_must_validate_and_may_free_what_was_held() {
        let running = state(&[(Kind::Pool, "app", json!({}))]);
        let mut m = model(&running);
        let mut stored = running.clone();
        stored.resources.insert(
            (Kind::Endpoint, "later/127.0.0.1:9".into()),
            Versioned {
                version: 5,
                body: Arc::new(json!({})),
            },
        );
        let mut taken = false;
        let a = admit(&mut m, &running, &stored, &[], &mut taken).unwrap();
        assert_eq!(a.held.len(), 1);
        // A change that breaks something itself is refused, whatever is held.
        let mut bad = stored.clone();
        bad.resources.remove(&(Kind::Pool, "app".into()));
        bad.resources.insert(
            (Kind::Route, "r".into()),
            Versioned {
                version: 6,
                body: Arc::new(json!({"listener": "nope", "pool": "app"})),
            },
        );
        let must = [(Kind::Route, "r".to_string())];
        let mut m = model(&running);
        assert!(admit(&mut m, &running, &bad, &must, &mut taken).is_err());
        // The pool the endpoint lacked, added: it runs too.
        let mut fix = stored.clone();
        fix.resources.insert(
            (Kind::Pool, "later".into()),
            Versioned {
                version: 7,
                body: Arc::new(json!({})),
            },
        );
        let mut m = model(&running);
        let must = [(Kind::Pool, "later".to_string())];
        let a = admit(&mut m, &running, &fix, &must, &mut taken).unwrap();
        assert!(a.held.is_empty(), "{:?}", a.held);
        assert_eq!(m.config().pools["later"].endpoints.len(), 1);
    }
}
