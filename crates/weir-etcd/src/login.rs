//! `--store-user-file`: etcd's user and password, and the login made with them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use etcd_client::Client;
use tracing::info;

use crate::connect_error::ConnectError;

/// `--store-user-file`'s user and password. Each member's client logs in on its first
/// request rather than in `connect`: etcd-client's `with_user` logs in inside
/// `Client::connect`, which then fails while etcd is away (and weir with it) instead of
/// starting from the cache or waiting, as it does without a user.
#[derive(Clone)]
pub(crate) struct Login {
    pub(crate) user: String,
    password: String,
    pub(crate) file: PathBuf,
}

impl Login {
    pub(crate) fn read(file: &Path) -> Result<Login, ConnectError> {
        let text = read_file(file)?;
        let text = String::from_utf8_lossy(&text);
        let line = text.lines().next().unwrap_or_default().trim();
        let (user, password) = line
            .split_once(':')
            .ok_or_else(|| ConnectError::UserFile(file.to_owned()))?;
        Ok(Login {
            user: user.to_string(),
            password: password.to_string(),
            file: file.to_owned(),
        })
    }

    /// Logs `client` in unless `done` says it was before. Afterwards the client logs in
    /// again by itself whenever etcd says the token expired.
    pub(crate) async fn ensure(
        &self,
        client: &Client,
        done: &AtomicBool,
    ) -> Result<(), etcd_client::Error> {
        if done.load(Ordering::Acquire) {
            return Ok(());
        }
        let creds = (self.user.clone(), self.password.clone());
        match client.clone().update_user(Some(creds)).await {
            Ok(()) => {}
            // As etcd's own Go client does: with authentication off, no token is needed.
            Err(etcd_client::Error::GRpcStatus(s))
                if s.message().contains("authentication is not enabled") =>
            {
                info!(
                    "etcd's authentication is off: the user of --store-user-file {} is not needed",
                    self.file.display()
                );
            }
            Err(e) => return Err(e),
        }
        done.store(true, Ordering::Release);
        Ok(())
    }
}

/// A file weir was given, naming it when it does not read.
pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>, ConnectError> {
    std::fs::read(path).map_err(|source| ConnectError::Read {
        path: path.to_owned(),
        source,
    })
}
