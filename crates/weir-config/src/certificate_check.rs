//! Rules across tables for certificates, checked once the whole config is walked: a
//! certificate attaches to a TLS listener, each TLS listener has one, and at most one is its
//! default. Apart from certificate.rs, which reads `[certificates.NAME]` for the walk
//! (walk.rs), because these rules read the walk's result.

use crate::certificate::CertificateAt;
use crate::read::Sink;
use crate::walk::Walked;

/// Rules across tables: what a certificate attaches to, and what each TLS listener has.
pub(crate) fn check(sink: &mut Sink<'_>, w: &Walked) {
    for (name, at) in &w.certificates {
        let c = &w.config.certificates[name];
        let (Some(span), Some(l)) = (&at.listener, w.config.listeners.get(&c.listener)) else {
            // A missing listener is reported with the other references.
            continue;
        };
        if l.tls.is_none() {
            sink.error(
                span.clone(),
                format!(
                    "listener `{}` has no [tls] table: a certificate is served by a TLS listener (add [listeners.{}.tls])",
                    c.listener, c.listener
                ),
            );
        }
    }
    for (name, l) in &w.config.listeners {
        if l.tls.is_none() {
            continue;
        }
        let tls_at = &w.listeners[name].tls;
        let attached: Vec<(&String, &CertificateAt)> = w
            .config
            .certificates
            .iter()
            .filter(|(_, c)| c.listener == *name)
            .map(|(n, _)| (n, &w.certificates[n]))
            .collect();
        if let (Some(span), true) = (&tls_at.no_files, attached.is_empty()) {
            sink.error(
                span.clone(),
                format!(
                    "a TLS listener needs at least one certificate: list files in certificates = [ {{ cert = \"certs/site.pem\", key = \"certs/site.key\" }} ], or add a [certificates.NAME] with listener = \"{name}\""
                ),
            );
        }
        let mut default = tls_at
            .default
            .as_ref()
            .map(|_| format!("listener `{name}`'s certificate files have one"));
        for (cert, at) in attached {
            let Some(span) = &at.default else { continue };
            match &default {
                Some(first) => sink.error(
                    span.clone(),
                    format!("only one certificate of a listener can be the default ({first})"),
                ),
                None => default = Some(format!("certificate `{cert}` is")),
            }
        }
    }
}
