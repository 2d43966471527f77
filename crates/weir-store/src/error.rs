//! Typed errors: what went wrong with the store itself vs. why a change was refused.

use std::path::PathBuf;

/// The store could not do its job (I/O, locking, a damaged file). Maps to 5xx, or to a
/// startup failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "config store {} is already open in another weir process (or another Store in this one); \
         stop it, or give this one a different data directory",
        path.display()
    )]
    AlreadyOpen { path: PathBuf },
    #[error("config store {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config store: {0}")]
    Db(#[from] redb::Error),
    #[error(
        "config store was written by a newer weir (format {found}, this one reads {supported})"
    )]
    UnknownFormat { found: u64, supported: u64 },
    #[error("config store is damaged: {0}")]
    Corrupt(String),
    /// A shared store (etcd) did not answer: nothing was written.
    #[error("config store {store} is unreachable: {reason}")]
    Unreachable { store: String, reason: String },
    /// A shared store (etcd) was sent the change, its answer was lost, and whether it
    /// applied it could not be found out in time.
    #[error(
        "config store {store} may have applied the change, its answer was lost: {reason}; read it back before trying again"
    )]
    Undecided { store: String, reason: String },
    /// Other replicas' commits kept landing between this one's read and its write.
    #[error(
        "config store {store}: other replicas committed first {attempts} times in a row; try again"
    )]
    Contended { store: String, attempts: usize },
}

// redb reports each operation with its own error type; all of them fold into redb::Error.
macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for StoreError {
            fn from(e: $t) -> Self {
                StoreError::Db(e.into())
            }
        }
    )*};
}
from_redb!(
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);

/// Why a change was not committed. In every case nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum CommitError<E> {
    /// Update or delete of a resource that does not exist (404). `index` is the failing
    /// change's place in the batch.
    #[error("change {index}: not found")]
    NotFound { index: usize },
    /// Add of a resource that already exists (412), at version `current` (in the state the
    /// change was checked against: an earlier change of the batch may have written it).
    #[error("change {index}: already exists at version {current}")]
    AlreadyExists { index: usize, current: u64 },
    /// Update or delete naming a version that is no longer current (412).
    #[error("change {index}: stale version: the current version is {current}")]
    Stale { index: usize, current: u64 },
    /// The resulting configuration failed validation (422).
    #[error("invalid configuration: {0}")]
    Invalid(E),
    #[error(transparent)]
    Store(#[from] StoreError),
}
