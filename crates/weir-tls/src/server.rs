//! A TLS listener's settings as a rustls `ServerConfig`: the protocol versions, ALPN, client
//! certificates, and session resumption (tickets with rotating keys, plus a session cache
//! for TLS 1.2 clients), shared by every connection and thread of the listener.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::server::{ServerSessionMemoryCache, WebPkiClientVerifier};
use rustls::{RootCertStore, ServerConfig, SupportedProtocolVersion};

use crate::cert_error::CertError;
use crate::live::LiveCertificates;

/// TLS 1.2 sessions remembered for resumption by id (TLS 1.3 uses tickets, which cost no
/// memory here). About 100 bytes each.
const SESSION_CACHE: usize = 8192;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MinVersion {
    #[default]
    V12,
    V13,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ClientAuth {
    #[default]
    None,
    /// Ask for a certificate signed by the CA file; connect without one too.
    Optional(PathBuf),
    /// Refuse the handshake without a certificate signed by the CA file.
    Required(PathBuf),
}

#[derive(Debug, Clone, Default)]
pub struct ServerSettings {
    pub min_version: MinVersion,
    /// Offered protocols in order of preference, e.g. `[b"h2", b"http/1.1"]`.
    pub alpn: Vec<Vec<u8>>,
    pub client_auth: ClientAuth,
}

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("CA file: {0}")]
    Ca(CertError),
    #[error("CA file {path}: {reason}")]
    BadCa { path: String, reason: String },
    #[error("the client certificate's key {key} cannot be used: {reason}")]
    Identity { key: String, reason: String },
    #[error("TLS settings: {0}")]
    Rustls(#[from] rustls::Error),
}

pub fn server_config(
    settings: &ServerSettings,
    certs: Arc<LiveCertificates>,
) -> Result<Arc<ServerConfig>, SettingsError> {
    let provider = crate::provider::provider();
    let versions: &[&SupportedProtocolVersion] = match settings.min_version {
        MinVersion::V12 => &[&rustls::version::TLS13, &rustls::version::TLS12],
        MinVersion::V13 => &[&rustls::version::TLS13],
    };
    let builder =
        ServerConfig::builder_with_provider(provider.clone()).with_protocol_versions(versions)?;
    let builder = match &settings.client_auth {
        ClientAuth::None => builder.with_no_client_auth(),
        ClientAuth::Optional(ca) | ClientAuth::Required(ca) => {
            let roots = Arc::new(roots(ca)?);
            let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider);
            let verifier = match settings.client_auth {
                ClientAuth::Optional(_) => verifier.allow_unauthenticated(),
                _ => verifier,
            };
            let verifier = verifier.build().map_err(|e| SettingsError::BadCa {
                path: ca.display().to_string(),
                reason: e.to_string(),
            })?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_cert_resolver(certs);
    config.alpn_protocols = settings.alpn.clone();
    config.ticketer = crate::provider::ticketer()?;
    config.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE);
    Ok(Arc::new(config))
}

/// The certificates in a CA file, as trust anchors.
pub fn roots(path: &Path) -> Result<RootCertStore, SettingsError> {
    let pem = crate::pem::read(path).map_err(SettingsError::Ca)?;
    let certs = crate::pem::parse_chain(&pem, path).map_err(SettingsError::Ca)?;
    let mut store = RootCertStore::empty();
    let (_, bad) = store.add_parsable_certificates(certs);
    if store.is_empty() || bad > 0 {
        return Err(SettingsError::BadCa {
            path: path.display().to_string(),
            reason: format!("{bad} certificate(s) cannot be used as trust anchors"),
        });
    }
    Ok(store)
}
