//! The embedded durable store (`weir run --data DIR`): every change is a redb write
//! transaction, validated inside it against the whole resulting state, fsynced before the
//! answer.

use std::sync::Arc;

use weir_store::{Change, State, Store};

use super::{refused, Check, Commit, Initial, Source};
use crate::checked::Checked;
use crate::refused::Refused;
use crate::start_error::StartError;

pub struct StoreSource {
    store: Arc<Store>,
    /// `[admin]` as TOML: validation must know the admin address (no listener may take it).
    preamble: String,
}

impl StoreSource {
    pub fn new(store: Arc<Store>, preamble: String) -> StoreSource {
        StoreSource { store, preamble }
    }
}

impl Source for StoreSource {
    fn describe(&self) -> (&'static str, String) {
        ("store", self.store.path().display().to_string())
    }

    fn initial(&self) -> Result<Initial, StartError> {
        Ok(Initial {
            state: self.store.state()?,
            preamble: self.preamble.clone(),
        })
    }

    fn commit(
        &self,
        _current: &Arc<State>,
        changes: Vec<Change>,
        check: Check<'_, Checked>,
    ) -> Result<Commit<Checked>, Refused> {
        // The store applies to its own last committed state, which is `current`.
        let keys = super::keys(&changes);
        let done = self
            .store
            .commit_with(changes, |s| check(s, &keys))
            .map_err(refused)?;
        Ok(Commit {
            committed: done.committed,
            state: done.state,
            checked: done.checked,
        })
    }
}
