//! Helpers shared by the test binaries.
#![allow(dead_code)]

use serde_json::{json, Value};
use tempfile::TempDir;
use weir_store::{Change, Kind, Precondition, State, Store};

pub fn open_tmp() -> (TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    (dir, store)
}

pub fn put(kind: Kind, name: &str, body: Value, pre: Precondition) -> Change {
    Change::Put {
        kind,
        name: name.into(),
        body,
        pre,
    }
}

pub fn del(kind: Kind, name: &str, pre: Precondition) -> Change {
    Change::Delete {
        kind,
        name: name.into(),
        pre,
    }
}

pub fn pool(balance: &str) -> Value {
    json!({ "balance": balance })
}

/// Accepts anything.
pub fn any(_: &State) -> Result<(), String> {
    Ok(())
}

/// A stand-in for weir-config's whole-config validation: references must resolve.
pub fn refs(state: &State) -> Result<(), String> {
    for (name, route) in state.of_kind(Kind::Route) {
        let target = route.body["pool"].as_str().unwrap_or_default();
        if state.get(Kind::Pool, target).is_none() {
            return Err(format!("routes.{name}.pool: no pool named {target:?}"));
        }
    }
    for (name, _) in state.of_kind(Kind::Endpoint) {
        let (pool, _) = name.split_once('/').unwrap();
        if state.get(Kind::Pool, pool).is_none() {
            return Err(format!("pools.{pool}: no such pool for endpoint {name}"));
        }
    }
    Ok(())
}
