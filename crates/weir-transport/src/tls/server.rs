//! A TLS listener's server side, built from `[listeners.NAME.tls]` and the
//! `[certificates.NAME]` attached to the listener: the rustls config (versions, ALPN, client
//! certificates, resumption), the certificates it serves (files reloaded when they change,
//! `reload.rs`; attached certificates change with the config), and the listener's handshake
//! counters. Built here without watching its files: `watched.rs` builds and then starts
//! the watch, so that this file and the reload (`reload.rs`, which makes the config again
//! through [`TlsServer::rebuild_config`]) need not know each other.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use http::HeaderName;
use weir_config::{CertificateResource, ClientAuth, ListenerTls, Protocol, TlsVersion};
use weir_tls::{LiveCertificates, MinVersion, PairSource, ServerSettings};

use crate::file_stamp::{stamp, Stamp};

pub struct TlsServer {
    pub listener: Arc<str>,
    /// What it was built from: a config change that keeps it keeps this server (and
    /// its certificates, watcher and session tickets).
    pub settings: ListenerTls,
    /// The `[certificates.NAME]` attached to the listener, by name, as built (served after
    /// the files): a change to one builds a new server.
    pub attached: Vec<(String, CertificateResource)>,
    pub protocol: Protocol,
    /// Made again when the client CA file changes (`reload.rs`), with the same session
    /// tickets and cache.
    pub config: ArcSwap<rustls::ServerConfig>,
    /// The client CA file's stamp when it was last read.
    pub client_ca_seen: Mutex<Stamp>,
    pub certs: Arc<LiveCertificates>,
    pub handshake_timeout: Duration,
    /// Where the verified client certificate's subject goes (http listeners).
    pub identity_header: Option<HeaderName>,
    /// Where its `x-forwarded-client-cert` element goes (http listeners).
    pub cert_header: Option<HeaderName>,
    pub metrics: Arc<crate::tls::metrics::ListenerTls>,
}

impl std::fmt::Debug for TlsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsServer")
            .field("listener", &self.listener)
            .finish_non_exhaustive()
    }
}

/// Why a listener's TLS cannot start; the running config stays as it was.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    #[error("{source}")]
    Certificate {
        listener: String,
        #[source]
        source: weir_tls::CertError,
    },
    #[error("{source}")]
    Settings {
        listener: String,
        #[source]
        source: weir_tls::SettingsError,
    },
}

impl TlsSetupError {
    pub fn listener(&self) -> &str {
        match self {
            TlsSetupError::Certificate { listener, .. }
            | TlsSetupError::Settings { listener, .. } => listener,
        }
    }
}

impl TlsServer {
    /// Reads the certificates (every pair must load: the files, then the `attached`
    /// resources) and makes the rustls config; nothing watches the files yet
    /// (`TlsServer::build` does).
    pub(super) fn load(
        listener: &str,
        protocol: Protocol,
        tls: &ListenerTls,
        attached: Vec<(String, CertificateResource)>,
    ) -> Result<Arc<TlsServer>, TlsSetupError> {
        let sources = tls
            .certificates
            .iter()
            .map(|c| PairSource::files(c.cert.clone(), c.key.clone(), c.default))
            .chain(attached.iter().map(|(name, c)| {
                PairSource::in_memory(
                    &format!("certificates/{name}"),
                    c.cert_pem.clone(),
                    c.key_pem.clone(),
                    c.default,
                )
            }))
            .collect();
        let certs = LiveCertificates::load(sources, SystemTime::now()).map_err(|mut errs| {
            TlsSetupError::Certificate {
                listener: listener.to_string(),
                source: errs.remove(0).1,
            }
        })?;
        // An attached certificate is loaded whatever its dates (one that expired while stored
        // must not keep weir from starting); say so where it is.
        let now = SystemTime::now();
        let current = certs.current();
        for (id, src) in current.identities.iter().zip(certs.sources()) {
            if let (false, Err(e)) = (src.is_files(), id.check_dates(&src.cert, now)) {
                tracing::warn!(listener, "{e}; it is served until replaced");
            }
        }
        let certs = Arc::new(certs);
        // Stamped first: a change made while it is read is seen by the watch.
        let client_ca_seen = Mutex::new(tls.client_ca.as_deref().and_then(stamp));
        let config =
            weir_tls::server::server_config(&server_settings(protocol, tls), certs.clone())
                .map_err(|source| TlsSetupError::Settings {
                    listener: listener.to_string(),
                    source,
                })?;
        let name: Arc<str> = listener.into();
        let server = Arc::new(TlsServer {
            metrics: crate::tls::metrics::for_listener(&name),
            listener: name,
            settings: tls.clone(),
            attached,
            protocol,
            config: ArcSwap::new(config),
            client_ca_seen,
            certs,
            handshake_timeout: tls.handshake_timeout,
            identity_header: tls
                .client_identity_header
                .as_deref()
                .and_then(|h| HeaderName::from_bytes(h.as_bytes()).ok()),
            cert_header: tls
                .client_cert_header
                .as_deref()
                .and_then(|h| HeaderName::from_bytes(h.as_bytes()).ok()),
        });
        Ok(server)
    }

    /// Makes the rustls config again (reading the client CA file), keeping the session
    /// tickets and cache of the one in use, which stays when this fails.
    pub fn rebuild_config(&self) -> Result<(), weir_tls::SettingsError> {
        let mut fresh = weir_tls::server::server_config(
            &server_settings(self.protocol, &self.settings),
            self.certs.clone(),
        )?;
        let current = self.config.load();
        let c = Arc::make_mut(&mut fresh);
        c.ticketer = current.ticketer.clone();
        c.session_storage = current.session_storage.clone();
        self.config.store(fresh);
        Ok(())
    }
}

/// What weir_tls makes a listener's rustls config from.
fn server_settings(protocol: Protocol, tls: &ListenerTls) -> ServerSettings {
    let ca = || tls.client_ca.clone().unwrap_or_default();
    ServerSettings {
        min_version: match tls.min_version {
            TlsVersion::V12 => MinVersion::V12,
            TlsVersion::V13 => MinVersion::V13,
        },
        // What weir speaks on an http listener, HTTP/2 first (as browsers and gRPC
        // clients prefer); a tcp listener relays whatever the client speaks, so it
        // offers nothing.
        alpn: match protocol {
            Protocol::Http => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
            Protocol::Tcp => Vec::new(),
        },
        client_auth: match tls.client_auth {
            ClientAuth::None => weir_tls::ClientAuth::None,
            ClientAuth::Optional => weir_tls::ClientAuth::Optional(ca()),
            ClientAuth::Required => weir_tls::ClientAuth::Required(ca()),
        },
    }
}
