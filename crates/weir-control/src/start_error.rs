//! Why weir could not start from its config source. Its own file because `RunningConfig`
//! (control.rs) returns it from `start` and each source from `initial`.

use weir_proxy::ApplyError;
use weir_store::StoreError;

use crate::compile::Invalid;

/// Why the running config could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("the stored configuration is invalid: {0}")]
    Invalid(Invalid),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Apply(#[from] ApplyError),
}
