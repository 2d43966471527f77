//! A pool's rustls client configs, one per protocol it may offer by ALPN, read from the
//! files its `[pools.NAME.tls]` names: made when the pool's TLS is built (`watched.rs`)
//! and again when the files change (`reload.rs`).

use std::sync::Arc;

use rustls::ClientConfig;
use tokio_rustls::TlsConnector;
use weir_config::{PoolTls, TlsVersion};
use weir_tls::{ClientSettings, MinVersion, SettingsError, Trust};

/// HTTP/1.1 pools offer `http/1.1` unless `alpn` says otherwise, HTTP/2 pools `h2`; a tcp
/// listener's sessions offer only what `alpn` lists. All share one session store.
pub(super) struct Connectors {
    pub http: TlsConnector,
    pub h2: TlsConnector,
    pub tcp: TlsConnector,
}

/// Why a pool's TLS settings could not be built (a CA or client certificate file that no
/// longer reads, though the config was valid when checked).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BuildError(pub(super) String);

impl Connectors {
    /// Reads the files `settings` names and builds the client configs.
    pub(super) fn build(settings: &PoolTls) -> Result<Connectors, BuildError> {
        let client = ClientSettings {
            trust: match &settings.ca {
                Some(ca) => Trust::File(ca.clone()),
                None => Trust::System,
            },
            min_version: match settings.min_version {
                TlsVersion::V12 => MinVersion::V12,
                TlsVersion::V13 => MinVersion::V13,
            },
            identity: settings.cert.clone().zip(settings.key.clone()),
            alpn: match &settings.alpn {
                Some(list) => list.iter().map(|p| p.as_bytes().to_vec()).collect(),
                None => vec![b"http/1.1".to_vec()],
            },
        };
        let http = weir_tls::client::client_config(&client).map_err(|e| BuildError(why(e)))?;
        // A clone shares the session store: one pool, one set of sessions.
        let offering = |alpn: Vec<Vec<u8>>| match settings.alpn {
            Some(_) => http.clone(),
            None => {
                let mut c = ClientConfig::clone(&http);
                c.alpn_protocols = alpn;
                Arc::new(c)
            }
        };
        let tcp = offering(Vec::new());
        let h2 = offering(vec![b"h2".to_vec()]);
        Ok(Connectors {
            http: TlsConnector::from(http),
            h2: TlsConnector::from(h2),
            tcp: TlsConnector::from(tcp),
        })
    }
}

/// A settings error in a pool's terms (weir-tls words its CA errors for listeners).
fn why(e: SettingsError) -> String {
    match e {
        SettingsError::Ca(e) => format!("ca: {e}"),
        SettingsError::BadCa { path, reason } => format!("ca {path}: {reason}"),
        e => e.to_string(),
    }
}
