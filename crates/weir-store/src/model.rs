//! The values the store hands out and takes in.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::kind::Kind;

/// A resource body and the version it was last written at (sent as the ETag). The body is
/// shared, so that copying a State (once per commit) copies no JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct Versioned {
    pub version: u64,
    pub body: Arc<serde_json::Value>,
}

/// The whole configuration at one revision: what validation sees, and what the data plane
/// is built from. A BTreeMap so that iteration (and anything derived from it) is deterministic.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct State {
    pub revision: u64,
    pub resources: BTreeMap<(Kind, String), Versioned>,
}

impl State {
    pub fn get(&self, kind: Kind, name: &str) -> Option<&Versioned> {
        self.resources.get(&(kind, name.to_owned()))
    }

    /// All resources of one kind, by name.
    pub fn of_kind(&self, kind: Kind) -> impl Iterator<Item = (&str, &Versioned)> {
        self.resources
            .iter()
            .filter(move |((k, _), _)| *k == kind)
            .map(|((_, n), v)| (n.as_str(), v))
    }

    /// The endpoints of `pool`, as (addr, resource).
    pub fn endpoints_of<'a>(
        &'a self,
        pool: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a Versioned)> + 'a {
        self.of_kind(Kind::Endpoint).filter_map(move |(n, v)| {
            let addr = n.strip_prefix(pool)?.strip_prefix('/')?;
            Some((addr, v))
        })
    }
}

/// What must be true of a resource for a change to it to proceed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition {
    /// `If-None-Match: *` — the resource must not exist.
    Absent,
    /// `If-Match: "N"` — the resource must exist at exactly version N.
    Version(u64),
}

/// One write. There is deliberately no unconditional variant: every change names what it
/// expects to replace, so concurrent writers cannot silently overwrite each other.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Put {
        kind: Kind,
        name: String,
        body: serde_json::Value,
        pre: Precondition,
    },
    Delete {
        kind: Kind,
        name: String,
        pre: Precondition,
    },
}

/// The outcome of one committed change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Committed {
    /// The resource's new version; 0 for a delete.
    pub version: u64,
    /// The store revision the change was committed at.
    pub revision: u64,
}
