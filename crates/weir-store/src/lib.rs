//! weir's durable, versioned configuration store (docs/DESIGN.md §3).
//!
//! A repository, not a map: every change names what it expects to replace (a version, or
//! absence), is validated against the whole resulting configuration, and is committed in a
//! single redb write transaction that is fsynced before [`Store::commit`] returns.
//! See README.md for the guarantees and how they are kept.

mod apply;
mod error;
mod kind;
mod model;
mod schema;
mod store;

pub use apply::{apply, Applied};
pub use error::{CommitError, StoreError};
pub use kind::{endpoint_name, resource_path, Kind};
pub use model::{Change, Committed, Precondition, State, Versioned};
pub use store::{Done, Store, FILE_NAME};
