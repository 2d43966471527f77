//! How to reach etcd: what `weir run --store etcd://...` and its `--store-*` flags say.
//! Its own file because connecting (source.rs) and reading (read.rs) both take it.

use std::path::PathBuf;
use std::time::Duration;

use crate::url::StoreUrl;

/// `--store-timeout`'s default: what one call to etcd may take, every member tried.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// How to reach etcd.
pub struct Options {
    pub url: StoreUrl,
    /// CA certificate (PEM) that signs etcd's: the client talks TLS when given.
    pub ca: Option<PathBuf>,
    /// Client certificate and key (PEM), for etcd's `--client-cert-auth`.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// A file whose first line is `USER:PASSWORD`, for etcd's authentication.
    pub user_file: Option<PathBuf>,
    /// `[admin]` as TOML: validation must know the admin address.
    pub preamble: String,
    /// Where the last applied config is kept, to start from while etcd is away.
    pub cache: PathBuf,
    /// What one call to etcd may take (a commit, a heartbeat, a read), every member tried.
    pub timeout: Duration,
}
