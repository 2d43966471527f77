//! The replica's last applied config on local disk (`--store-cache`), written after every
//! change it applied, so that a replica that starts while etcd is away serves what it served
//! before instead of nothing. Written to a temporary file and renamed over the old one, so a
//! crash mid-write leaves the previous cache; mode 0600, as it holds certificate keys.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};
use weir_store::{Kind, State, Versioned};

use crate::cache_error::CacheError;

/// Writes `state`, the config of the store at `prefix`.
pub fn write(path: &Path, prefix: &str, state: &State) -> std::io::Result<()> {
    let resources: Vec<Value> = state
        .resources
        .iter()
        .map(|((kind, name), v)| {
            json!({"kind": kind.as_str(), "name": name, "version": v.version, "spec": *v.body})
        })
        .collect();
    let doc = json!({"prefix": prefix, "revision": state.revision, "resources": resources});
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(doc.to_string().as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// The cached config of the store at `prefix`; why not, if there is none to use.
pub fn read(path: &Path, prefix: &str) -> Result<State, CacheError> {
    let text = std::fs::read(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => CacheError::Missing {
            path: path.into(),
            source,
        },
        _ => CacheError::Unreadable {
            path: path.into(),
            source,
        },
    })?;
    let bad = |reason: &str| CacheError::Unusable {
        path: path.into(),
        reason: reason.into(),
    };
    let doc: Value = serde_json::from_slice(&text).map_err(|e| bad(&e.to_string()))?;
    if doc["prefix"] != prefix {
        return Err(bad(&format!(
            "it caches the config under {}, not {prefix}",
            doc["prefix"]
        )));
    }
    let mut state = State {
        revision: doc["revision"].as_u64().ok_or_else(|| bad("no revision"))?,
        ..State::default()
    };
    for r in doc["resources"]
        .as_array()
        .ok_or_else(|| bad("no resources"))?
    {
        let kind = r["kind"]
            .as_str()
            .and_then(Kind::parse)
            .ok_or_else(|| bad("a resource of no known kind"))?;
        let name = r["name"]
            .as_str()
            .ok_or_else(|| bad("a resource without a name"))?;
        let version = r["version"]
            .as_u64()
            .ok_or_else(|| bad("a resource without a version"))?;
        state.resources.insert(
            (kind, name.to_string()),
            Versioned {
                version,
                body: Arc::new(r["spec"].clone()),
            },
        );
    }
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_what_it_wrote_for_its_prefix_only() {
        let dir = std::env::temp_dir().join(format!("weir-cache-{}", std::process::id()));
        let path = dir.join("cache.json");
        let mut state = State {
            revision: 9,
            ..State::default()
        };
        state.resources.insert(
            (Kind::Pool, "app".into()),
            Versioned {
                version: 7,
                body: Arc::new(json!({"balance": "least_conn"})),
            },
        );
        write(&path, "/weir", &state).unwrap();
        assert_eq!(read(&path, "/weir").unwrap(), state);
        assert!(read(&path, "/other")
            .unwrap_err()
            .to_string()
            .contains("not /other"));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
