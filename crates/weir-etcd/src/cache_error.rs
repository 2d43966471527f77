//! Why the replica's cached config (`--store-cache`) cannot be started from. Having none is
//! a first start, nothing to report; having one that cannot be used (cut short, unreadable,
//! another prefix's) is worth saying, so the callers tell the two apart.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// No cache file yet.
    #[error("{}: {source}", path.display())]
    Missing {
        path: PathBuf,
        source: std::io::Error,
    },
    /// There, but it cannot be read (its permissions, a directory).
    #[error("{}: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Read, but not this store's config as weir wrote it.
    #[error("{}: {reason}", path.display())]
    Unusable { path: PathBuf, reason: String },
}
