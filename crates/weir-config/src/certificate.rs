//! `[certificates.NAME]`: a certificate chain and its key as PEM text, attached to a TLS
//! listener (an API resource, `certificates/NAME`, so that a provider can add certificates
//! without touching the listener). The pair is checked from memory as it is read (it
//! parses, the key matches, within its dates), so the API refuses a bad one at its field;
//! the rules across tables (the listener has `[tls]`, every TLS listener has a certificate,
//! at most one default per listener) are in certificate_check.rs.

use std::path::Path;
use std::time::SystemTime;

use weir_tls::{pem, CertError, Identity};

use crate::defaults;
use crate::model::CertificateResource;
use crate::read::{self, Fields, Sink, Span};

const KEYS: &[&str] = &["listener", "cert_pem", "key_pem", "default"];

/// Where a certificate resource was written, and the pair once it checked out.
#[derive(Clone)]
pub(crate) struct CertificateAt {
    pub listener: Option<Span>,
    /// `default = true`.
    pub default: Option<Span>,
    /// The checked pair (for coverage); `None` after an error.
    pub identity: Option<Identity>,
}

/// What a certificate outside its dates is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dates {
    /// An error: a certificate written now must be valid now.
    Refuse,
    /// A warning: a stored certificate that expired while weir ran or was stopped must not
    /// keep weir from starting (it is served on; clients refuse it until it is replaced).
    Warn,
}

pub(crate) fn read(
    sink: &mut Sink<'_>,
    name: &str,
    t: &Fields<'_, '_>,
    now: SystemTime,
    dates: Dates,
) -> (CertificateResource, CertificateAt) {
    t.check_keys(sink, KEYS);
    let what = format!("certificate `{name}`");
    let mut c = CertificateResource {
        listener: String::new(),
        cert_pem: String::new(),
        key_pem: String::new(),
        default: false,
    };
    let mut at = CertificateAt {
        listener: None,
        default: None,
        identity: None,
    };
    if let Some(v) = t.require(sink, "listener", &what, "\"web\"") {
        if let Some(s) = read::string(sink, v) {
            c.listener = s.to_owned();
            at.listener = Some(v.span());
        }
    }
    let cert = t
        .require(
            sink,
            "cert_pem",
            &what,
            "\"-----BEGIN CERTIFICATE-----\\n...\"",
        )
        .and_then(|v| Some((read::string(sink, v)?, v.span())));
    let key = t
        .require(
            sink,
            "key_pem",
            &what,
            "\"-----BEGIN PRIVATE KEY-----\\n...\"",
        )
        .and_then(|v| Some((read::string(sink, v)?, v.span())));
    if let Some(v) = t.get("default") {
        match v.get_ref().as_bool() {
            Some(b) => {
                c.default = b;
                at.default = b.then(|| v.span());
            }
            None => read::wrong_type(sink, v, "a boolean"),
        }
    }
    let (cert_name, key_name) = (Path::new("cert_pem"), Path::new("key_pem"));
    let chain = cert.as_ref().and_then(|(text, span)| {
        pem::parse_chain(text.as_bytes(), cert_name)
            .map_err(|e| sink.error(span.clone(), e.to_string()))
            .ok()
    });
    let key_der = key.as_ref().and_then(|(text, span)| {
        pem::parse_key(text.as_bytes(), key_name)
            .map_err(|e| sink.error(span.clone(), e.to_string()))
            .ok()
    });
    if let (Some(chain), Some(key_der), Some((_, cert_span)), Some((_, key_span))) =
        (chain, key_der, &cert, &key)
    {
        match Identity::from_der_at(chain, key_der, cert_name, key_name, None) {
            Ok(id) => {
                if let Err(e) = id.check_dates(cert_name, now) {
                    match dates {
                        Dates::Refuse => {
                            sink.error(cert_span.clone(), e.to_string());
                            return finish(c, at, cert, key);
                        }
                        Dates::Warn => sink.warn(
                            cert_span.clone(),
                            format!("{e}: clients refuse it; replace it"),
                        ),
                    }
                } else if id.expires_within(defaults::EXPIRY_WARNING, now) {
                    sink.warn(
                        cert_span.clone(),
                        format!(
                            "this certificate expires in {} (renew it: clients refuse an expired certificate)",
                            days_left(&id, now)
                        ),
                    );
                }
                at.identity = Some(id);
            }
            Err(e) => {
                let span = match e {
                    CertError::KeyMismatch { .. } | CertError::UnsupportedKey { .. } => key_span,
                    _ => cert_span,
                };
                sink.error(span.clone(), e.to_string());
            }
        }
    }
    finish(c, at, cert, key)
}

fn finish(
    mut c: CertificateResource,
    at: CertificateAt,
    cert: Option<(&str, Span)>,
    key: Option<(&str, Span)>,
) -> (CertificateResource, CertificateAt) {
    if let Some((text, _)) = cert {
        c.cert_pem = text.to_owned();
    }
    if let Some((text, _)) = key {
        c.key_pem = text.to_owned();
    }
    (c, at)
}

pub(crate) fn days_left(id: &Identity, now: SystemTime) -> String {
    let now = now
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    match (id.not_after - now).max(0) / 86_400 {
        0 => "less than a day".to_string(),
        1 => "1 day".to_string(),
        n => format!("{n} days"),
    }
}
