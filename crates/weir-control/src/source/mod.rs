//! Where the running config comes from, behind one trait, so that the commit path in
//! `control.rs` never asks which source it has: a config file (`file.rs`), the embedded store
//! (`store.rs`), etcd (the weir-etcd crate), and later others (docs/ARCHITECTURE.md, "A
//! config source").

pub mod file;
pub mod store;

use std::sync::Arc;

use weir_store::{Change, CommitError, Committed, Kind, State};

use crate::compile::Invalid;
use crate::leases::HeartbeatError;
use crate::refused::Refused;
use crate::start_error::StartError;

/// What a source starts with: its resources, and the process settings (`[admin]`,
/// `[global]`) as TOML.
pub struct Initial {
    pub state: State,
    pub preamble: String,
}

/// A changed config found outside weir (a file edited; for etcd, a watch event).
pub struct Outside {
    pub state: State,
    pub preamble: String,
    /// `[admin]` changed: it takes effect at the next start only.
    pub admin_changed: bool,
}

/// The validation a commit must pass, run on the whole resulting state inside the source's
/// transaction, with the keys in which that state differs from the running one (the
/// changes'; for a store shared by replicas, also what others committed that this replica
/// has not applied yet); what it returns comes back with the commit.
pub type Check<'a, T> = &'a mut dyn FnMut(&State, &[(Kind, String)]) -> Result<T, Invalid>;

/// A committed batch: what each change committed as, the whole new state, and what the
/// check made of it.
pub struct Commit<T> {
    pub committed: Vec<Committed>,
    pub state: Arc<State>,
    pub checked: T,
}

pub trait Source: Send + Sync {
    /// `file` or `store` (`GET /api/v1/config`'s `mode`), and where (a path, a URL).
    fn describe(&self) -> (&'static str, String);

    fn initial(&self) -> Result<Initial, StartError>;

    /// Refuses changes this source does not take (a file owns its listeners, routes, pools
    /// and endpoints), before anything is validated. A store takes every change.
    fn accepts(&self, _changes: &[Change]) -> Result<(), Refused> {
        Ok(())
    }

    /// Applies `changes` to `current` (the last committed state) all-or-nothing, checking
    /// every precondition and then `check` on the whole result, and makes them durable as
    /// far as the source promises (the store: fsync; a file: memory).
    fn commit(
        &self,
        current: &Arc<State>,
        changes: Vec<Change>,
        check: Check<'_, crate::checked::Checked>,
    ) -> Result<Commit<crate::checked::Checked>, Refused>;

    /// Changes made outside weir as they happen (an etcd watch): each message asks for a
    /// [`Source::reread`], which `RunningConfig` then validates and applies like any change.
    /// None when the binary is who tells (a file: its watch and SIGHUP, `crates/weir/src/
    /// reload.rs`, call `RunningConfig::refresh`).
    fn watch(&self) -> Option<tokio::sync::mpsc::Receiver<()>> {
        None
    }

    /// Reads what changed outside weir since `current`; `Ok(None)` when nothing did.
    fn reread(&self, _current: &State) -> Result<Option<Outside>, String> {
        Ok(None)
    }

    /// Whether [`Source::reread`] can find anything (SIGHUP says so when not).
    fn rereads(&self) -> bool {
        false
    }

    /// A re-read state was applied: it is the source's state from now on.
    fn accept(&self, _outside: Outside) {}

    /// The data plane now runs `state` (a commit's, a re-read's, or the first): a shared
    /// store keeps it as the replica's last known good config, to start from when the store
    /// is away.
    fn applied(&self, _state: &Arc<State>) {}

    /// Why the source cannot be reached now (the running config stays, writes are refused);
    /// `None` when it can, or when it is local.
    fn problem(&self) -> Option<String> {
        None
    }

    /// Whether others write to the source too (etcd): then a stored resource that does not
    /// validate is held back while the rest runs (`held.rs`), rather than refusing the whole
    /// re-read, and a change is refused only for what it writes itself. A file or the
    /// embedded store is only written through weir, or reloaded all or nothing.
    fn holds_back(&self) -> bool {
        false
    }

    /// The config this replica last applied, kept by the source (etcd's `--store-cache`),
    /// and where: `RunningConfig::start` starts from it when [`Source::initial`] does not
    /// validate, then takes the source's own, holding back what does not validate.
    fn fallback(&self) -> Option<(State, String)> {
        None
    }

    /// Whether the source keeps endpoint leases itself (etcd's: shared by every replica,
    /// outliving a restart, expired by the store). Otherwise `RunningConfig` keeps them in
    /// memory and deletes what expires.
    fn keeps_leases(&self) -> bool {
        false
    }

    /// Renews the lease of endpoint `name` (only asked when [`Source::keeps_leases`]).
    fn renew<'a>(&'a self, _name: &'a str) -> Renewal<'a> {
        Box::pin(std::future::ready(Err(HeartbeatError::NoLease)))
    }
}

/// A lease renewal under way: the lease's ttl once renewed.
pub type Renewal<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<std::time::Duration, HeartbeatError>> + Send + 'a>,
>;

/// A commit for a source that keeps its state in memory (a file's registrations, a test's):
/// `changes` applied to `current` with their preconditions, then `check` on the result.
pub fn commit_in_memory(
    current: &State,
    changes: Vec<Change>,
    check: Check<'_, crate::checked::Checked>,
) -> Result<Commit<crate::checked::Checked>, Refused> {
    let keys = keys(&changes);
    let applied = weir_store::apply::<Invalid>(current.clone(), changes).map_err(refused)?;
    let checked = check(&applied.state, &keys)?;
    Ok(Commit {
        committed: applied.committed,
        state: Arc::new(applied.state),
        checked,
    })
}

/// The resources `changes` write.
pub fn keys(changes: &[Change]) -> Vec<(Kind, String)> {
    changes
        .iter()
        .map(|c| match c {
            Change::Put { kind, name, .. } | Change::Delete { kind, name, .. } => {
                (*kind, name.clone())
            }
        })
        .collect()
}

/// A refused commit as the API answers it: the store names the failing change.
pub fn refused(e: CommitError<Invalid>) -> Refused {
    match e {
        CommitError::NotFound { index } => Refused::NotFound { index },
        CommitError::AlreadyExists { index, current } => Refused::AlreadyExists { index, current },
        CommitError::Stale { index, current } => Refused::Stale { index, current },
        CommitError::Invalid(i) => Refused::Invalid(i),
        CommitError::Store(s) => Refused::Store(s),
    }
}
