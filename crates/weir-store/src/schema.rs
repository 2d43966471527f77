//! The on-disk layout: two redb tables, and how a State is read from them.

use redb::{ReadableTable, TableDefinition};

use crate::error::StoreError;
use crate::kind::Kind;
use crate::model::{State, Versioned};

/// (kind, name) → (version, JSON body).
pub(crate) const RESOURCES: TableDefinition<(&str, &str), (u64, &[u8])> =
    TableDefinition::new("resources");
/// Store-wide counters, by name.
pub(crate) const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

pub(crate) const REVISION: &str = "revision";
pub(crate) const FORMAT: &str = "format";
/// Bumped whenever the layout above changes incompatibly; an older weir refuses a newer file.
pub(crate) const FORMAT_VERSION: u64 = 1;

pub(crate) type RowKey = (&'static str, &'static str);
pub(crate) type RowValue = (u64, &'static [u8]);

/// Reads the whole configuration. Used in a read transaction for `state()`, and inside the
/// write transaction of a commit, where it sees exactly what the commit will replace.
pub(crate) fn load(
    resources: &impl ReadableTable<RowKey, RowValue>,
    meta: &impl ReadableTable<&'static str, u64>,
) -> Result<State, StoreError> {
    let mut state = State {
        revision: meta.get(REVISION)?.map(|g| g.value()).unwrap_or(0),
        ..State::default()
    };
    for row in resources.iter()? {
        let (key, value) = row?;
        let (kind, name) = key.value();
        let (version, body) = value.value();
        let key = (parse_kind(kind)?, name.to_owned());
        state.resources.insert(key, decode(version, body)?);
    }
    Ok(state)
}

pub(crate) fn parse_kind(s: &str) -> Result<Kind, StoreError> {
    Kind::parse(s).ok_or_else(|| StoreError::Corrupt(format!("unknown resource kind {s:?}")))
}

pub(crate) fn decode(version: u64, body: &[u8]) -> Result<Versioned, StoreError> {
    let body = serde_json::from_slice(body)
        .map_err(|e| StoreError::Corrupt(format!("resource body is not JSON: {e}")))?;
    Ok(Versioned {
        version,
        body: std::sync::Arc::new(body),
    })
}

pub(crate) fn encode(body: &serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(body).expect("a serde_json::Value always serializes")
}
