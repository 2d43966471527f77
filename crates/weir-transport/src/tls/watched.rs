//! A listener's TLS server as weir runs it: built (`server.rs`), then its certificate files
//! watched for change (`reload.rs`). The one place that knows both, so the server does not
//! call its reload and the reload only sees the server.

use std::sync::Arc;

use weir_config::{CertificateResource, ListenerTls, Protocol};

use super::reload;
use super::server::{TlsServer, TlsSetupError};

impl TlsServer {
    /// Reads the certificates (every pair must load: the files, then the `attached`
    /// resources) and makes the rustls config; starts watching the files.
    pub fn build(
        listener: &str,
        protocol: Protocol,
        tls: &ListenerTls,
        attached: Vec<(String, CertificateResource)>,
    ) -> Result<Arc<TlsServer>, TlsSetupError> {
        let server = TlsServer::load(listener, protocol, tls, attached)?;
        reload::watch(&server);
        Ok(server)
    }
}
