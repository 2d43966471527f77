//! Endpoints given by DNS name, as the resolver last saw them: `weir_dns_resolutions_total`
//! by pool and result, and each followed name's state for `/api/v1/stats` and the dashboard.
//! Kept here, below the data plane, so weir-proxy shows them without knowing who resolves.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// How one resolution of a name ended.
pub const RESULTS: [&str; 4] = ["ok", "empty", "failed", "timeout"];

/// A followed name now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameState {
    /// `ok`, `empty`, `failed` or `timeout`: the last resolution's result.
    pub result: &'static str,
    /// Why the last resolution failed, if it did.
    pub error: Option<String>,
    /// The addresses serving from this name (the last good answer's).
    pub addresses: Vec<String>,
    /// When it is asked again.
    pub next_query: std::time::Instant,
}

static COUNTS: Mutex<BTreeMap<(String, &'static str), u64>> = Mutex::new(BTreeMap::new());
/// By pool, then name as the config writes it.
static NAMES: Mutex<BTreeMap<String, BTreeMap<String, NameState>>> = Mutex::new(BTreeMap::new());

/// One resolution for `pool` ended with `result` (one of [`RESULTS`]).
pub fn count(pool: &str, result: &'static str) {
    *COUNTS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry((pool.to_owned(), result))
        .or_default() += 1;
}

/// `(pool, result) → resolutions` since start.
pub fn counts() -> Vec<((String, &'static str), u64)> {
    let c = COUNTS.lock().unwrap_or_else(|e| e.into_inner());
    c.iter().map(|(k, v)| (k.clone(), *v)).collect()
}

/// `name` of `pool` is now `state`.
pub fn set_name(pool: &str, name: &str, state: NameState) {
    NAMES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(pool.to_owned())
        .or_default()
        .insert(name.to_owned(), state);
}

/// `name` of `pool` is no longer followed.
pub fn remove_name(pool: &str, name: &str) {
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(m) = names.get_mut(pool) {
        m.remove(name);
        if m.is_empty() {
            names.remove(pool);
        }
    }
}

/// The names `pool` follows, by name.
pub fn names(pool: &str) -> BTreeMap<String, NameState> {
    NAMES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(pool)
        .cloned()
        .unwrap_or_default()
}
