//! Rules across tables for TLS, checked once the whole config is walked: which routes may
//! use `sni`, `https_redirect` and `hsts` given their listener, and pools that would wrap
//! passed-through TLS in a second session. Apart from tls.rs, which reads the tables and
//! which the walk (walk.rs) calls, because these rules read the walk's result.

use crate::defaults;
use crate::model::Protocol;
use crate::read::{Sink, Span};
use crate::walk::Walked;

/// Rules across tables: which routes may use `sni`, `https_redirect` and `hsts`, given
/// their listener.
pub(crate) fn check(sink: &mut Sink<'_>, w: &Walked) {
    passthrough_pools(sink, w);
    for (name, at) in &w.routes {
        let r = &w.config.routes[name];
        let Some(l) = w.config.listeners.get(&r.listener) else {
            continue;
        };
        if l.sni_routing {
            match &at.sni {
                None if r.sni.is_none() && at.matcher_ok => sink.error(
                    at.listener.clone().unwrap_or(at.name.clone()),
                    format!(
                        "route `{name}` is on listener `{}`, which routes by SNI; add e.g. sni = \"db.example.com\"",
                        r.listener
                    ),
                ),
                _ => {}
            }
            for (key, span) in [
                ("host", &at.host),
                ("https_redirect", &at.https_redirect),
                ("hsts", &at.hsts),
            ] {
                if let Some(span) = span {
                    sink.error(
                        span.clone(),
                        format!(
                            "{key} is for http routes; listener `{}` passes TLS through by SNI",
                            r.listener
                        ),
                    );
                }
            }
            if r.path_prefix != defaults::PATH_PREFIX {
                sink.error(
                    at.name.clone(),
                    format!("route `{name}` has a path_prefix, but listener `{}` passes TLS through by SNI (no paths)", r.listener),
                );
            }
            continue;
        }
        if let Some(span) = &at.sni {
            if l.protocol == Protocol::Http {
                sink.error(
                    span.clone(),
                    format!(
                        "sni routes a tcp listener with sni_routing = true; listener `{}` is http (use `host`)",
                        r.listener
                    ),
                );
            }
        }
        if let Some(span) = &at.https_redirect {
            if l.tls.is_some() {
                sink.warn(
                    span.clone(),
                    format!(
                        "https_redirect has no effect: listener `{}` already serves https",
                        r.listener
                    ),
                );
            }
        }
        if let Some(span) = &at.hsts {
            if l.tls.is_none() && !r.https_redirect {
                sink.warn(
                    span.clone(),
                    format!(
                        "browsers ignore hsts over plain http, and listener `{}` has no [tls]",
                        r.listener
                    ),
                );
            }
        }
    }
}

/// A pool with `tls` behind an `sni_routing` listener would wrap the client's TLS, passed
/// through unopened, in a second TLS session: almost surely a mistake, so it warns (a
/// backend could in principle expect TLS inside TLS).
fn passthrough_pools(sink: &mut Sink<'_>, w: &Walked) {
    let cfg = &w.config;
    let has_tls = |pool: &str| cfg.pools.get(pool).is_some_and(|p| p.tls.is_some());
    let mut uses: Vec<(Span, &str, &str)> = Vec::new();
    for (name, at) in &w.listeners {
        let l = &cfg.listeners[name];
        if let (true, Some(span), Some(pool)) = (l.sni_routing, &at.pool, &l.pool) {
            uses.push((span.clone(), pool, name));
        }
    }
    for (name, at) in &w.routes {
        let r = &cfg.routes[name];
        let sni = cfg
            .listeners
            .get(&r.listener)
            .is_some_and(|l| l.sni_routing);
        if let (true, Some(span)) = (sni, &at.pool) {
            uses.push((span.clone(), &r.pool, &r.listener));
        }
    }
    for (span, pool, listener) in uses {
        if has_tls(pool) {
            sink.warn(
                span,
                format!(
                    "pool `{pool}` has [pools.{pool}.tls], but listener `{listener}` passes its clients' TLS through unopened (sni_routing): the pool would wrap it in a second TLS session"
                ),
            );
        }
    }
}
