//! Why a `weir ctl` command failed. Its own file because every command returns it and the
//! dispatcher (ctl/mod.rs), which calls the commands, prints it.

use super::client::ApiError;

/// Why a ctl command failed; printed as `error: ...` with exit status 1.
#[derive(Debug, thiserror::Error)]
pub enum CtlError {
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error("{0} already exists")]
    Exists(String),
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Token(#[from] weir_config::TokenError),
    /// The config file could not be read, or is too large.
    #[error(transparent)]
    Source(weir_config::LoadError),
    /// The diagnostics are complete messages of their own (`FILE:LINE:COL: error: ...`).
    #[error("{diags}\n{file}: {count} error{s}", s = if *.count == 1 { "" } else { "s" })]
    Invalid {
        file: String,
        count: usize,
        diags: weir_config::Diagnostics,
    },
    #[error("{0}")]
    FromToml(#[from] weir_control::from_toml::FromTomlError),
    #[error("cannot run {program}: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
}
