//! Why weir could not connect to etcd, naming the flag or file to fix. Its own file because
//! connecting (source.rs), logging in (login.rs) and the first read (read.rs) all return it.

use std::path::PathBuf;

/// Why etcd could not be reached or logged in to.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--store-user-file {}: expected USER:PASSWORD on its first line", .0.display())]
    UserFile(PathBuf),
    #[error("--store-cert and --store-key go together")]
    HalfIdentity,
    #[error("--store-ca/--store-cert: {0}")]
    Tls(weir_tls::SettingsError),
    #[error("etcd at {url} refused user `{user}` of --store-user-file {}: {reason}", file.display())]
    Login {
        url: String,
        user: String,
        file: PathBuf,
        reason: String,
    },
    #[error("etcd at {url} is unreachable: {reason}")]
    Unreachable { url: String, reason: String },
}
