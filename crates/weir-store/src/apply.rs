//! Applying changes to a State in memory: preconditions and versioning, no I/O.
//! Kept pure so the rules of docs/DESIGN.md §3 live in one place, apart from the database; the
//! control plane uses it too, for endpoint registrations in file mode.

use std::collections::BTreeSet;

use crate::error::CommitError;
use crate::kind::Kind;
use crate::model::{Change, Committed, Precondition, State, Versioned};

/// The state after a batch of changes, what each change committed as, and which keys changed.
pub struct Applied {
    pub state: State,
    pub committed: Vec<Committed>,
    pub touched: BTreeSet<(Kind, String)>,
}

/// Applies `changes` in order at revision `state.revision + 1`. Each precondition is checked
/// against the state left by the changes before it, so a batch may add a resource and then
/// update it (naming the new revision); any failure fails the whole batch.
pub fn apply<E>(mut state: State, changes: Vec<Change>) -> Result<Applied, CommitError<E>> {
    // A resource's version is the revision it was last written at: unique and ever-growing,
    // so a version is never reused, even after delete and re-add.
    let revision = state.revision + 1;
    state.revision = revision;
    let mut committed = Vec::with_capacity(changes.len());
    let mut touched = BTreeSet::new();
    for (index, change) in changes.into_iter().enumerate() {
        match change {
            Change::Put {
                kind,
                name,
                body,
                pre,
            } => {
                let key = (kind, name);
                check(index, pre, state.resources.get(&key))?;
                state.resources.insert(
                    key.clone(),
                    Versioned {
                        version: revision,
                        body: body.into(),
                    },
                );
                touched.insert(key);
                committed.push(Committed {
                    version: revision,
                    revision,
                });
            }
            Change::Delete { kind, name, pre } => {
                let key = (kind, name);
                check(index, pre, state.resources.get(&key))?;
                // Passing `Absent` on a missing resource still leaves nothing to delete.
                if state.resources.remove(&key).is_none() {
                    return Err(CommitError::NotFound { index });
                }
                touched.insert(key);
                committed.push(Committed {
                    version: 0,
                    revision,
                });
            }
        }
    }
    Ok(Applied {
        state,
        committed,
        touched,
    })
}

/// Change `index`'s precondition against the resource as the changes before it left it.
fn check<E>(
    index: usize,
    pre: Precondition,
    current: Option<&Versioned>,
) -> Result<(), CommitError<E>> {
    match (pre, current) {
        (Precondition::Absent, None) => Ok(()),
        (Precondition::Absent, Some(cur)) => Err(CommitError::AlreadyExists {
            index,
            current: cur.version,
        }),
        (Precondition::Version(_), None) => Err(CommitError::NotFound { index }),
        (Precondition::Version(v), Some(cur)) if cur.version == v => Ok(()),
        (Precondition::Version(_), Some(cur)) => Err(CommitError::Stale {
            index,
            current: cur.version,
        }),
    }
}
