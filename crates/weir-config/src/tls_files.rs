//! What `weir check` and `weir run` read from the files a TLS config names: each
//! certificate pair loads (readable, valid PEM, key matching, within its dates), CA files
//! parse, and the routes of a TLS listener have a certificate for their host. The same
//! weir-tls code the listeners use, so a config `check` accepts loads.

use std::path::Path;
use std::time::SystemTime;

use weir_tls::{CertError, Identity, Resolver};

use crate::certificate::days_left;
use crate::defaults;
use crate::host_match::HostMatch;
use crate::read::Sink;
use crate::walk::Walked;

pub(crate) fn check(sink: &mut Sink<'_>, w: &Walked, now: SystemTime) {
    for (name, l) in &w.config.listeners {
        let Some(tls) = &l.tls else { continue };
        let at = &w.listeners[name].tls;
        let mut loaded = Vec::new();
        for (pair, pair_at) in tls.certificates.iter().zip(&at.pairs) {
            match Identity::load(&pair.cert, &pair.key, now) {
                Ok(id) => {
                    if id.expires_within(defaults::EXPIRY_WARNING, now) {
                        sink.warn(
                            pair_at.cert.clone(),
                            format!(
                                "{} expires in {} (renew it: clients refuse an expired certificate)",
                                pair.cert.display(),
                                days_left(&id, now)
                            ),
                        );
                    }
                    loaded.push((id, pair.default));
                }
                Err(e) => {
                    // Name the file at fault: the key's span for key problems.
                    let span = match e {
                        CertError::NoKey { .. }
                        | CertError::UnsupportedKey { .. }
                        | CertError::KeyMismatch { .. } => pair_at.key.clone(),
                        CertError::Read { ref path, .. } | CertError::TooLarge { ref path, .. }
                            if *path == pair.key =>
                        {
                            pair_at.key.clone()
                        }
                        CertError::BadPem { ref path, .. } if *path == pair.key => {
                            pair_at.key.clone()
                        }
                        _ => pair_at.cert.clone(),
                    };
                    let key_unread = before_key(&e, &pair.cert);
                    sink.error(span, e.to_string());
                    if key_unread {
                        if let Err(e) = key_alone(&pair.key) {
                            sink.error(pair_at.key.clone(), e.to_string());
                        }
                    }
                }
            }
        }
        if let (Some(ca), Some(span)) = (&tls.client_ca, &at.client_ca) {
            if let Err(e) = weir_tls::server::roots(ca) {
                sink.error(span.clone(), e.to_string());
            }
        }
        // With the `[certificates.NAME]` attached to it, which were checked as they were read.
        let attached: Vec<_> = w
            .config
            .certificates
            .iter()
            .filter(|(_, c)| c.listener == *name)
            .map(|(n, c)| (&w.certificates[n].identity, c.default))
            .collect();
        let files_loaded = loaded.len() == tls.certificates.len();
        loaded.extend(
            attached
                .iter()
                .filter_map(|(id, default)| Some(((*id).clone()?, *default))),
        );
        // Coverage is judged only when every pair loaded: otherwise the error above says why.
        if !files_loaded
            || loaded.len() != tls.certificates.len() + attached.len()
            || loaded.iter().any(|(_, d)| *d)
        {
            continue;
        }
        let resolver = Resolver::new(loaded.iter().map(|(id, default)| (id, *default)));
        for (route, r) in &w.config.routes {
            if r.listener != *name {
                continue;
            }
            let (Some(host), Some(span)) = (&r.host, &w.routes[route].host) else {
                continue;
            };
            let probe = match host {
                HostMatch::Exact(h) => h.clone(),
                HostMatch::Suffix(s) => format!("*{s}"),
            };
            if !resolver.covers(&probe) {
                sink.warn(
                    span.clone(),
                    format!(
                        "no certificate on listener `{name}` covers this host, and none is the default: clients asking for it are refused"
                    ),
                );
            }
        }
    }
    for (name, p) in &w.config.pools {
        let Some(tls) = &p.tls else { continue };
        let at = &w.pools[name].tls;
        if let (Some(ca), Some(span)) = (&tls.ca, &at.ca) {
            if let Err(e) = weir_tls::server::roots(ca) {
                sink.error(span.clone(), e.to_string());
            }
        }
        if let (Some(cert), Some(key), Some(cspan), Some(kspan)) =
            (&tls.cert, &tls.key, &at.cert, &at.key)
        {
            if let Err(e) = Identity::load(cert, key, now) {
                let span = if matches!(e, CertError::KeyMismatch { .. } | CertError::NoKey { .. }) {
                    kspan
                } else {
                    cspan
                };
                let key_unread = before_key(&e, cert);
                sink.error(span.clone(), e.to_string());
                if key_unread {
                    if let Err(e) = key_alone(key) {
                        sink.error(kspan.clone(), e.to_string());
                    }
                }
            }
        }
    }
}

/// Whether `e` stopped the load at the certificate file, before its key was read: then the
/// key is checked on its own, so that a missing key is reported with a missing certificate.
fn before_key(e: &CertError, cert: &Path) -> bool {
    let at_cert = |path: &str| Path::new(path) == cert;
    match e {
        CertError::NoCertificate(_) => true,
        CertError::Read { path, .. }
        | CertError::TooLarge { path, .. }
        | CertError::BadPem { path, .. } => at_cert(path),
        _ => false,
    }
}

/// Reads and parses a key file alone, as a pair's load does.
fn key_alone(key: &Path) -> Result<(), CertError> {
    weir_tls::pem::parse_key(&weir_tls::pem::read(key)?, key).map(drop)
}
