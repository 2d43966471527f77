//! Why a config file could not be loaded: unreadable, too large, or invalid. Its own file
//! because reading a source (input.rs) and the entry points (lib.rs) both return it.

use crate::diagnostic::Diagnostics;

/// Errors from [`load_file`] and [`read_source`]: the file could not be read,
/// is too large, or is invalid (which includes not being UTF-8).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{file}: cannot read: {source}")]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{file}: larger than {} MiB ({limit} bytes), the most weir reads from a config file",
        .limit >> 20
    )]
    TooLarge { file: String, limit: u64 },
    #[error("{0}")]
    Invalid(#[from] Diagnostics),
}
