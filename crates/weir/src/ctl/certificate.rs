//! `weir ctl certificate ...`: a certificate and key from PEM files, sent as a
//! `certificates/NAME` resource (the key is never read back).

use std::path::{Path, PathBuf};

use clap::Subcommand;
use serde_json::json;
use weir_store::Kind;

use super::client::Client;
use super::error::CtlError;
use super::paths::path;
use super::resource::{create, delete, report_delete};

#[derive(Debug, Subcommand)]
pub enum CertificateCommand {
    /// Add a certificate to a TLS listener; new handshakes use it at once. Fails if it exists.
    ///
    /// The files are read here and sent as PEM text; weir checks the pair (it parses, the
    /// key matches, within its dates) before taking it.
    Create {
        name: String,
        /// The TLS listener that serves it.
        #[arg(long)]
        listener: String,
        /// PEM file of the chain: leaf first, then intermediates.
        #[arg(long, value_name = "FILE")]
        cert: PathBuf,
        /// PEM file of the leaf's private key.
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        /// Answer clients without SNI or with a name no certificate covers.
        #[arg(long)]
        default: bool,
    },
    /// Delete a certificate: new handshakes for its names get the listener's default.
    ///
    /// A certificate that does not exist is reported on stderr and the exit status is 0.
    Delete { name: String },
}

pub fn run(client: &Client, cmd: CertificateCommand) -> Result<(), CtlError> {
    match cmd {
        CertificateCommand::Create {
            name,
            listener,
            cert,
            key,
            default,
        } => {
            let spec = json!({
                "listener": listener,
                "cert_pem": read(&cert)?,
                "key_pem": read(&key)?,
                "default": default,
            });
            let v = create(
                client,
                &path(Kind::Certificate, &name),
                &spec,
                &format!("certificate `{name}`"),
            )?;
            println!("certificate {name} created (version {v})");
        }
        CertificateCommand::Delete { name } => {
            let d = delete(client, &path(Kind::Certificate, &name))?;
            report_delete(&format!("certificate {name}"), d);
        }
    }
    Ok(())
}

/// A PEM file, read with weir's bound for certificate files.
fn read(file: &Path) -> Result<String, CtlError> {
    let bytes = weir_tls::pem::read(file).map_err(|e| CtlError::Usage(e.to_string()))?;
    String::from_utf8(bytes)
        .map_err(|_| CtlError::Usage(format!("{} is not PEM text", file.display())))
}
