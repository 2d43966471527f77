//! Why a request to etcd failed, in words an operator can act on.
//!
//! etcd-client reports a failed connection as a gRPC status whose text is a Debug dump
//! (`code: 'Unknown error', message: "transport error", source: ...BrokenPipe...`). Worse,
//! the usual TLS mistakes all look alike from there, as a connection that broke: plain
//! HTTP/2 sent to an etcd that serves TLS (no `--store-ca`), and an etcd with
//! `--client-cert-auth` that refuses the client's certificate (or its lack of one) with an
//! alert right after the handshake, which the client's first write races. So on a
//! connection failure, [`Why::explain`] makes one TLS handshake of its own with each member
//! whose connection broke (a probe; all at once, within what the call has left, so that a
//! write still answers within `--store-timeout`) and says what it found; etcd's own
//! refusals (wrong password, no user, permissions) get the option to fix.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, RootCertStore};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_rustls::TlsConnector;

use crate::members::Failed;

/// A probe of one member gives up after this.
const PROBE: Duration = Duration::from_secs(5);
/// How long a probe waits for etcd to refuse its client certificate after the handshake.
/// etcd sends that alert as soon as it read the handshake's last message; an accepted
/// client hears nothing, so this is also what a probe costs when TLS is fine.
const ALERT: Duration = Duration::from_secs(2);

pub(crate) struct Why {
    /// With `--store-ca`/`--store-cert`: the same trust and client certificate as the
    /// client's, for the probe, and the certificate's file.
    pub tls: Option<(Arc<ClientConfig>, Option<PathBuf>)>,
    /// With `--store-user-file`: the user and the file.
    pub user: Option<(String, PathBuf)>,
    /// The key prefix, `/weir`.
    pub prefix: String,
}

impl Why {
    /// `failed` as one line: what etcd or each member said and, where this can tell, what
    /// the cause is and which option fixes it. The probes of members whose connection broke
    /// run at once and are given at most `within` (a write's answer must not wait for them).
    pub async fn explain(&self, failed: &Failed, within: Duration) -> String {
        let said = failed.to_string();
        if let Some(hint) = failed.refusal().and_then(|e| self.refused(e)) {
            return format!("{hint} ({said})");
        }
        if within.is_zero() {
            return said;
        }
        let wait = within.min(PROBE);
        // Concurrently, each within `wait`: a member that hangs must not keep the others
        // from being probed.
        let probes = failed
            .broken()
            .filter(|(_, e)| broke(e))
            .map(|(m, _)| timeout(wait, self.probe(m)));
        let found = join_all(probes)
            .await
            .into_iter()
            .flatten()
            .flatten()
            .next();
        match found {
            Some(found) => format!("{found} ({said})"),
            None => said,
        }
    }

    /// etcd answered, and refused: authentication and permissions.
    fn refused(&self, e: &etcd_client::Error) -> Option<String> {
        let etcd_client::Error::GRpcStatus(s) = e else {
            return None;
        };
        let msg = s.message();
        let user = self.user.as_ref();
        if msg.contains("authentication failed") {
            let (u, file) = user?;
            return Some(format!(
                "etcd refused user `{u}` of --store-user-file {}: wrong user or password",
                file.display()
            ));
        }
        if msg.contains("user name is empty") {
            return Some(
                "etcd has authentication on and weir gave no user: give --store-user-file (USER:PASSWORD)"
                    .into(),
            );
        }
        if msg.contains("permission denied") {
            return Some(match user {
                Some((u, _)) => format!(
                    "etcd's user `{u}` may not read and write the keys under {}/",
                    self.prefix
                ),
                None => format!(
                    "etcd refused access to the keys under {}/: it has authentication on; give \
                     --store-user-file (without one, etcd takes a client certificate's CN as the user)",
                    self.prefix
                ),
            });
        }
        None
    }

    /// What one TLS handshake with `member` shows; `None` if it shows nothing wrong (or
    /// the member cannot be reached at all, which the error itself says).
    async fn probe(&self, member: &str) -> Option<String> {
        let host = member.rsplit_once(':')?.0;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(host.to_string()).ok()?;
        let tcp = TcpStream::connect(member).await.ok()?;
        let Some((config, cert)) = &self.tls else {
            // Whatever certificate it shows, a TLS answer says it serves TLS.
            let e = TlsConnector::from(no_trust()?)
                .connect(name, tcp)
                .await
                .err()?;
            tls_error(&e)?;
            return Some(format!(
                "etcd at {member} serves TLS and weir talked plain HTTP/2 to it: give \
                 --store-ca, the CA certificate that signed etcd's"
            ));
        };
        let mut tls = match TlsConnector::from(config.clone()).connect(name, tcp).await {
            Ok(s) => s,
            Err(e) => {
                let hint = match tls_error(&e) {
                    Some(rustls::Error::InvalidCertificate(_)) => {
                        ": is --store-ca the CA that signed etcd's certificate, and is that \
                         certificate for this address?"
                    }
                    _ => "",
                };
                return Some(format!(
                    "TLS handshake with etcd at {member} failed: {e}{hint}"
                ));
            }
        };
        let mut byte = [0u8; 1];
        let Ok(Err(e)) = timeout(ALERT, tls.read(&mut byte)).await else {
            return None;
        };
        let Some(rustls::Error::AlertReceived(alert)) = tls_error(&e) else {
            return None;
        };
        // etcd 3.4 (Go 1.19) sends `bad_certificate` both for no certificate and for one
        // it does not trust: what weir sent tells which.
        Some(match cert {
            None => format!(
                "etcd at {member} refused the TLS connection (alert {alert:?}): it wants a \
                 client certificate (--client-cert-auth); give --store-cert and --store-key"
            ),
            Some(c) => format!(
                "etcd at {member} refused the client certificate {} (alert {alert:?}): is it \
                 signed by a CA in etcd's --trusted-ca-file?",
                c.display()
            ),
        })
    }
}

/// The connection failed or broke (rather than etcd answering with an error).
fn broke(e: &etcd_client::Error) -> bool {
    match e {
        etcd_client::Error::GRpcStatus(s) => std::error::Error::source(s).is_some(),
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => true,
        _ => false,
    }
}

/// The rustls error inside an error of tokio-rustls's.
fn tls_error(e: &std::io::Error) -> Option<&rustls::Error> {
    e.get_ref()?.downcast_ref::<rustls::Error>()
}

/// A client that trusts nothing: to find out whether a port speaks TLS.
fn no_trust() -> Option<Arc<ClientConfig>> {
    let config = ClientConfig::builder_with_provider(weir_tls::provider::provider())
        .with_safe_default_protocol_versions()
        .ok()?
        .with_root_certificates(RootCertStore::empty())
        .with_no_client_auth();
    Some(Arc::new(config))
}
