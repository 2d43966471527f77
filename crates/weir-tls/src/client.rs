//! A pool's upstream TLS settings as a rustls `ClientConfig`: whom to trust (the system's
//! roots or a CA file), the name to send and verify, an optional client certificate (mTLS
//! to backends), ALPN. rustls keeps sessions per server name in the config, so a pool's
//! new connections resume where its earlier ones left off.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use rustls::{ClientConfig, RootCertStore};

use crate::cert_error::CertError;
use crate::server::{roots, MinVersion, SettingsError};

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Trust {
    /// The operating system's store (`/etc/ssl/certs` on Debian; `SSL_CERT_FILE` and
    /// `SSL_CERT_DIR` override it).
    #[default]
    System,
    /// Only the certificates in this file.
    File(PathBuf),
}

#[derive(Debug, Clone, Default)]
pub struct ClientSettings {
    pub trust: Trust,
    pub min_version: MinVersion,
    /// A certificate and key presented to backends that ask for one.
    pub identity: Option<(PathBuf, PathBuf)>,
    pub alpn: Vec<Vec<u8>>,
}

pub fn client_config(settings: &ClientSettings) -> Result<Arc<ClientConfig>, SettingsError> {
    let provider = crate::provider::provider();
    let versions: &[&rustls::SupportedProtocolVersion] = match settings.min_version {
        MinVersion::V12 => &[&rustls::version::TLS13, &rustls::version::TLS12],
        MinVersion::V13 => &[&rustls::version::TLS13],
    };
    let trust = match &settings.trust {
        Trust::System => system_roots()?,
        Trust::File(path) => Arc::new(roots(path)?),
    };
    let builder = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)?
        .with_root_certificates(trust);
    let mut config = match &settings.identity {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let (chain, key_der) = crate::pem::read_pair(cert, key).map_err(SettingsError::Ca)?;
            builder
                .with_client_auth_cert(chain, key_der)
                .map_err(|e| SettingsError::Identity {
                    key: key.display().to_string(),
                    reason: e.to_string(),
                })?
        }
    };
    config.alpn_protocols = settings.alpn.clone();
    Ok(Arc::new(config))
}

/// The system's roots, read once: reading the directory takes milliseconds, and every pool
/// trusting the system shares them.
fn system_roots() -> Result<Arc<RootCertStore>, SettingsError> {
    static ROOTS: OnceLock<Result<Arc<RootCertStore>, String>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            let mut store = RootCertStore::empty();
            store.add_parsable_certificates(found.certs);
            match (store.is_empty(), found.errors.first()) {
                (false, _) => Ok(Arc::new(store)),
                (true, Some(e)) => Err(e.to_string()),
                (true, None) => Err("no certificates found".into()),
            }
        })
        .clone()
        .map_err(|reason| {
            SettingsError::Ca(CertError::BadPem {
                path: "the system certificate store".into(),
                reason,
            })
        })
}
