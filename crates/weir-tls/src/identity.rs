//! One certificate pair, checked before anything serves it: the key matches the leaf, the
//! leaf is within its dates, and its DNS names are known (they decide SNI and coverage).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::cert_error::CertError;
use crate::pem;

/// A certificate chain with its key, ready to present.
#[derive(Debug, Clone)]
pub struct Identity {
    pub key: Arc<CertifiedKey>,
    /// The leaf's DNS names (subjectAltName), lowercased; wildcards as `*.example.com`.
    pub names: Vec<String>,
    /// The leaf's validity, in seconds since the Unix epoch.
    pub not_before: i64,
    pub not_after: i64,
}

impl Identity {
    /// Reads and checks the pair in `cert` and `key` as of `now`.
    pub fn load(cert: &Path, key: &Path, now: SystemTime) -> Result<Identity, CertError> {
        let (chain, key_der) = pem::read_pair(cert, key)?;
        Identity::from_der(chain, key_der, cert, key, now)
    }

    /// Checks the pair held in memory as PEM text (a `certificates/NAME` resource); `cert_name`
    /// and `key_name` stand for them in messages. The key is parsed only once the chain parsed.
    /// With `now` `None`, the dates are not checked (see [`Identity::check_dates`]).
    pub fn from_pem(
        cert_pem: &str,
        key_pem: &str,
        cert_name: &Path,
        key_name: &Path,
        now: Option<SystemTime>,
    ) -> Result<Identity, CertError> {
        let chain = pem::parse_chain(cert_pem.as_bytes(), cert_name)?;
        let key_der = pem::parse_key(key_pem.as_bytes(), key_name)?;
        Identity::from_der_at(chain, key_der, cert_name, key_name, now)
    }

    pub fn from_der(
        chain: Vec<CertificateDer<'static>>,
        key_der: PrivateKeyDer<'static>,
        cert_path: &Path,
        key_path: &Path,
        now: SystemTime,
    ) -> Result<Identity, CertError> {
        Identity::from_der_at(chain, key_der, cert_path, key_path, Some(now))
    }

    /// Whether the leaf is within its dates at `now` (`cert_path` names it in the error).
    pub fn check_dates(&self, cert_path: &Path, now: SystemTime) -> Result<(), CertError> {
        let at = |t: i64| {
            x509_parser::time::ASN1Time::from_timestamp(t).map_or(t.to_string(), |t| t.to_string())
        };
        let now = unix(now);
        if now > self.not_after {
            return Err(CertError::Expired {
                path: cert_path.display().to_string(),
                not_after: at(self.not_after),
            });
        }
        if now < self.not_before {
            return Err(CertError::NotYetValid {
                path: cert_path.display().to_string(),
                not_before: at(self.not_before),
            });
        }
        Ok(())
    }

    /// [`Identity::from_der`], checking the dates only with `now`.
    pub fn from_der_at(
        chain: Vec<CertificateDer<'static>>,
        key_der: PrivateKeyDer<'static>,
        cert_path: &Path,
        key_path: &Path,
        now: Option<SystemTime>,
    ) -> Result<Identity, CertError> {
        let cert_name = cert_path.display().to_string();
        let (_, leaf) =
            X509Certificate::from_der(&chain[0]).map_err(|e| CertError::BadCertificate {
                path: cert_name.clone(),
                reason: e.to_string(),
            })?;
        let validity = leaf.validity();
        if let Some(now) = now.map(unix) {
            if now > validity.not_after.timestamp() {
                return Err(CertError::Expired {
                    path: cert_name,
                    not_after: validity.not_after.to_string(),
                });
            }
            if now < validity.not_before.timestamp() {
                return Err(CertError::NotYetValid {
                    path: cert_name,
                    not_before: validity.not_before.to_string(),
                });
            }
        }
        let names = dns_names(&leaf);
        let (not_before, not_after) = (
            validity.not_before.timestamp(),
            validity.not_after.timestamp(),
        );
        let signer = crate::provider::provider()
            .key_provider
            .load_private_key(key_der)
            .map_err(|e| CertError::UnsupportedKey {
                path: key_path.display().to_string(),
                reason: e.to_string(),
            })?;
        let certified = CertifiedKey::new(chain, signer);
        match certified.keys_match() {
            Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {}
            Err(_) => {
                return Err(CertError::KeyMismatch {
                    cert: cert_name,
                    key: key_path.display().to_string(),
                })
            }
        }
        Ok(Identity {
            key: Arc::new(certified),
            names,
            not_before,
            not_after,
        })
    }

    /// Whether the leaf expires within `d` of `now` (for the `weir check` warning).
    pub fn expires_within(&self, d: Duration, now: SystemTime) -> bool {
        self.not_after - unix(now) < d.as_secs() as i64
    }
}

fn dns_names(leaf: &X509Certificate<'_>) -> Vec<String> {
    let Ok(Some(san)) = leaf.subject_alternative_name() else {
        return Vec::new();
    };
    san.value
        .general_names
        .iter()
        .filter_map(|n| match n {
            GeneralName::DNSName(d) => Some(d.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

fn unix(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    }
}
