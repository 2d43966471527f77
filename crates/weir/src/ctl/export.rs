//! `weir ctl export`: the running config as a file.

use std::io::Write;

use super::client::Client;
use super::error::CtlError;

/// Prints the answer byte for byte: it is meant to be saved or piped to `weir check -`.
pub fn export(client: &Client) -> Result<(), CtlError> {
    let toml = client.get_text("export")?;
    let mut out = std::io::stdout().lock();
    // A closed pipe (`| head`) is the reader's choice, not an error worth a message.
    let _ = out.write_all(toml.as_bytes()).and_then(|()| out.flush());
    Ok(())
}
