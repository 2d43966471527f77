//! The Store: a redb file, one write transaction per commit, a broadcast per new revision.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use redb::{Database, ReadableDatabase, ReadableTable};
use tokio::sync::broadcast;

use crate::apply::{apply, Applied};
use crate::error::{CommitError, StoreError};
use crate::kind::Kind;
use crate::model::{Change, Committed, State, Versioned};
use crate::schema::{self, FORMAT, FORMAT_VERSION, META, RESOURCES, REVISION};

/// The database file inside the data directory.
pub const FILE_NAME: &str = "weir.redb";

/// Configuration is small; redb's default 1 GiB page cache would be far more than needed.
const CACHE_BYTES: usize = 16 << 20;

/// Subscribers only need "something changed" plus the newest revision; a slow one lags and
/// should just re-read `state()`.
const NOTIFY_CAPACITY: usize = 64;

pub struct Store {
    db: Database,
    path: PathBuf,
    notify: broadcast::Sender<u64>,
    /// Held across commit *and* notify, so subscribers receive revisions in order.
    /// (redb already serializes write transactions; this extends that past `commit()`.)
    /// It guards the last committed state: this Store is the file's only writer (redb locks
    /// it), so that is exactly what the next write transaction would read, without decoding
    /// every row again (a commit cost grew with the store: 60 ms per add at 10k endpoints).
    commit_lock: Mutex<Arc<State>>,
}

/// A committed batch: what each change committed as, the whole resulting state, and what the
/// validation returned for it.
#[derive(Debug)]
pub struct Done<T> {
    pub committed: Vec<Committed>,
    pub state: Arc<State>,
    pub checked: T,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (creating if needed) `dir/weir.redb`. redb takes an exclusive lock on the file, so
    /// a second open of the same directory — from any process — fails with
    /// `StoreError::AlreadyOpen` instead of two writers corrupting each other.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
            path: dir.to_owned(),
            source,
        })?;
        let path = dir.join(FILE_NAME);
        let db = match Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create(&path)
        {
            Ok(db) => db,
            Err(redb::DatabaseError::DatabaseAlreadyOpen) => {
                return Err(StoreError::AlreadyOpen { path })
            }
            Err(e) => return Err(e.into()),
        };
        init(&db)?;
        let current = {
            let txn = db.begin_read()?;
            schema::load(&txn.open_table(RESOURCES)?, &txn.open_table(META)?)?
        };
        Ok(Store {
            db,
            path,
            notify: broadcast::channel(NOTIFY_CAPACITY).0,
            commit_lock: Mutex::new(Arc::new(current)),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The whole configuration, as one consistent snapshot.
    pub fn state(&self) -> Result<State, StoreError> {
        let txn = self.db.begin_read()?;
        schema::load(&txn.open_table(RESOURCES)?, &txn.open_table(META)?)
    }

    pub fn revision(&self) -> Result<u64, StoreError> {
        let txn = self.db.begin_read()?;
        let meta = txn.open_table(META)?;
        Ok(meta.get(REVISION)?.map(|g| g.value()).unwrap_or(0))
    }

    pub fn get(&self, kind: Kind, name: &str) -> Result<Option<Versioned>, StoreError> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(RESOURCES)?;
        let row = table.get((kind.as_str(), name))?;
        row.map(|g| {
            let (version, body) = g.value();
            schema::decode(version, body)
        })
        .transpose()
    }

    /// Checks the precondition, builds the resulting whole State, calls `validate` on it, and
    /// commits — all inside ONE redb write transaction, so no other change can slip in between
    /// validation and commit. On any error nothing is written.
    pub fn commit<E>(
        &self,
        change: Change,
        validate: impl FnOnce(&State) -> Result<(), E>,
    ) -> Result<Committed, CommitError<E>> {
        let mut done = self.commit_all(vec![change], validate)?;
        Ok(done.pop().expect("one change commits as one"))
    }

    /// Several changes at once, all-or-nothing (for `weir ctl apply`): every precondition must
    /// hold and the final state must validate. All of them share one new revision. An empty
    /// batch changes nothing and does not bump the revision.
    pub fn commit_all<E>(
        &self,
        changes: Vec<Change>,
        validate: impl FnOnce(&State) -> Result<(), E>,
    ) -> Result<Vec<Committed>, CommitError<E>> {
        if changes.is_empty() {
            return Ok(Vec::new());
        }
        Ok(self.commit_with(changes, validate)?.committed)
    }

    /// [`Store::commit_all`], handing back the resulting state and what `validate` made of it
    /// (the control plane's checked config), so nothing has to leave the transaction on the
    /// side. An empty batch commits nothing but is still validated and returned.
    pub fn commit_with<T, E>(
        &self,
        changes: Vec<Change>,
        validate: impl FnOnce(&State) -> Result<T, E>,
    ) -> Result<Done<T>, CommitError<E>> {
        // A panic in `validate` poisons the lock but leaves nothing half-done (the transaction
        // is dropped, i.e. aborted, and the cached state was not touched), so a poisoned lock
        // is safe to take.
        let mut current = self.commit_lock.lock().unwrap_or_else(|p| p.into_inner());
        if changes.is_empty() {
            let checked = validate(&current).map_err(CommitError::Invalid)?;
            return Ok(Done {
                committed: Vec::new(),
                state: current.clone(),
                checked,
            });
        }
        let Applied {
            state,
            committed,
            touched,
        } = apply((**current).clone(), changes)?;
        let checked = validate(&state).map_err(CommitError::Invalid)?;
        // Only now the write transaction: redb admits one writer at a time, and the lock above
        // keeps this process's commits in order. On any early return below, `txn` is dropped
        // uncommitted, which aborts it.
        let txn = self.db.begin_write().map_err(StoreError::from)?;
        write(&txn, &state, touched).map_err(CommitError::Store)?;
        // Default durability (Immediate): commit returns only after fsync.
        txn.commit().map_err(StoreError::from)?;
        let state = Arc::new(state);
        *current = state.clone();
        // No subscribers is not an error.
        let _ = self.notify.send(state.revision);
        Ok(Done {
            committed,
            state,
            checked,
        })
    }

    /// Receives the new revision after each commit.
    pub fn subscribe(&self) -> broadcast::Receiver<u64> {
        self.notify.subscribe()
    }
}

/// Creates the tables on first open and refuses a file from a newer format.
fn init(db: &Database) -> Result<(), StoreError> {
    let txn = db.begin_write()?;
    {
        txn.open_table(RESOURCES)?;
        let mut meta = txn.open_table(META)?;
        let found = meta.get(FORMAT)?.map(|g| g.value());
        match found {
            None => {
                meta.insert(FORMAT, FORMAT_VERSION)?;
            }
            Some(FORMAT_VERSION) => {}
            Some(found) => {
                return Err(StoreError::UnknownFormat {
                    found,
                    supported: FORMAT_VERSION,
                })
            }
        }
    }
    txn.commit()?;
    Ok(())
}

/// Writes only the rows that changed, and the new revision.
fn write(
    txn: &redb::WriteTransaction,
    state: &State,
    touched: std::collections::BTreeSet<(Kind, String)>,
) -> Result<(), StoreError> {
    let mut resources = txn.open_table(RESOURCES)?;
    for key in touched {
        let row_key = (key.0.as_str(), key.1.as_str());
        match state.resources.get(&key) {
            Some(v) => {
                resources.insert(row_key, (v.version, schema::encode(&v.body).as_slice()))?;
            }
            None => {
                resources.remove(row_key)?;
            }
        }
    }
    txn.open_table(META)?.insert(REVISION, state.revision)?;
    Ok(())
}
