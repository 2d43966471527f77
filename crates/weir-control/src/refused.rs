//! Why a change was not made: the one answer every path that changes the running config
//! (the API, a reload, an expired lease) and every source give. Its own file because
//! `RunningConfig` (control.rs) and the sources return it, and lease expiry
//! (lease_upkeep.rs) looks at it.

use weir_store::StoreError;

use crate::compile::Invalid;

/// Why a change was not made. In every case the running config is untouched.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("change {index}: not found")]
    NotFound { index: usize },
    #[error("change {index}: already exists at version {current}")]
    AlreadyExists { index: usize, current: u64 },
    #[error("change {index}: stale version; the current version is {current}")]
    Stale { index: usize, current: u64 },
    #[error("{0}")]
    Invalid(#[from] Invalid),
    #[error("weir runs from the config file {0}; change the file (it is reloaded on change) or run weir without -c to manage listeners, routes and pools through the API")]
    FileMode(String),
    #[error("endpoint {name} is defined in the config file {file}; change it there")]
    FileDefined { name: String, file: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}
