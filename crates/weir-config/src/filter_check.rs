//! The rules for filters that span tables, checked once the whole config is walked: a
//! chain names filters that exist, each once, of kinds its listener takes; the pools
//! error_pages and forward_auth name exist; and, for `weir check` and a file's load, the
//! files filters name read. Apart from filter/, whose readers the walk (walk.rs) calls,
//! because these rules read the walk's result.

use crate::filter::{check_users_file, read_page, ErrorPages, Filter, Page};
use crate::model::Protocol;
use crate::read::{Sink, Span};
use crate::suggest::missing;
use crate::walk::Walked;

/// A route's chain names filters that exist, each once, and only on http listeners; a
/// tcp listener's, only address lists (a connection has no request to change).
pub(crate) fn check(sink: &mut Sink<'_>, w: &Walked) {
    let cfg = &w.config;
    for (name, at) in &w.routes {
        let r = &cfg.routes[name];
        let tcp = cfg
            .listeners
            .get(&r.listener)
            .is_some_and(|l| l.protocol == Protocol::Tcp);
        if tcp {
            if let Some(span) = at.filters.first() {
                sink.error(
                    span.clone(),
                    format!("route `{name}` is on tcp listener `{}`: filters apply to http routes only (a tcp listener's own `filters` take ip_allow and ip_deny)", r.listener),
                );
            }
            continue;
        }
        chain(sink, w, &r.filters, &at.filters);
    }
    for (name, at) in &w.listeners {
        let l = &cfg.listeners[name];
        let Some(first) = at.filters.first() else {
            continue;
        };
        if l.protocol == Protocol::Http {
            sink.error(
                first.clone(),
                format!("listener `{name}` is an http listener: its requests take filters on their routes (`filters` on [routes.NAME])"),
            );
            continue;
        }
        chain(sink, w, &l.filters, &at.filters);
        for (f, span) in l.filters.iter().zip(&at.filters) {
            if let Some(kind) = cfg.filters.get(f).map(Filter::kind) {
                if !matches!(kind, "ip_allow" | "ip_deny") {
                    sink.error(
                        span.clone(),
                        format!("filter `{f}` is a {kind} filter; a tcp listener takes only ip_allow and ip_deny (a connection has no request to change)"),
                    );
                }
            }
        }
    }
    error_pages_pools(sink, w);
    forward_auth_pool(sink, w);
}

/// What the filters name outside the config, read for `weir check` and a file's load
/// (error_pages' page files, basic_auth's users files); the API's changes meet them when
/// the data plane builds the filter.
pub(crate) fn check_files(sink: &mut Sink<'_>, w: &Walked) {
    error_pages_files(sink, w);
    for (name, f) in &w.config.filters {
        if let (Filter::BasicAuth(b), Some(span)) =
            (f, w.filters.get(name).and_then(|a| a.users_file.as_ref()))
        {
            check_users_file(sink, b, span);
        }
    }
}

/// Each name exists and is there once.
fn chain(sink: &mut Sink<'_>, w: &Walked, names: &[String], spans: &[Span]) {
    for (i, (f, span)) in names.iter().zip(spans).enumerate() {
        if names[..i].contains(f) {
            sink.error(
                span.clone(),
                format!("filter `{f}` is already in this chain; a filter runs once per request"),
            );
            continue;
        }
        // A filter that is written but does not read is reported where it is.
        if !w.filters.contains_key(f) {
            let existing: Vec<&str> = w.filters.keys().map(String::as_str).collect();
            sink.error(span.clone(), missing("filter", "filters", f, existing));
        }
    }
}

/// The pools pages come from exist.
fn error_pages_pools(sink: &mut Sink<'_>, w: &Walked) {
    for (name, f) in &w.config.filters {
        let Filter::ErrorPages(ErrorPages {
            page: Page::Pool { pool, .. },
            ..
        }) = f
        else {
            continue;
        };
        let Some(span) = w.filters.get(name).and_then(|at| at.pool.clone()) else {
            continue;
        };
        if !w.config.pools.contains_key(pool) {
            let existing: Vec<&str> = w.config.pools.keys().map(String::as_str).collect();
            sink.error(span, missing("pool", "pools", pool, existing));
        }
    }
}

/// Each page file reads (for `weir check` and a file's load, which read what a config names).
fn error_pages_files(sink: &mut Sink<'_>, w: &Walked) {
    for (name, f) in &w.config.filters {
        let Filter::ErrorPages(ErrorPages {
            page: Page::File { path, .. },
            ..
        }) = f
        else {
            continue;
        };
        let Some(span): Option<Span> = w.filters.get(name).and_then(|at| at.file.clone()) else {
            continue;
        };
        if let Err(e) = read_page(path) {
            sink.error(span, format!("error page: {e}"));
        }
    }
}

/// The auth service's pool exists.
fn forward_auth_pool(sink: &mut Sink<'_>, w: &Walked) {
    for (name, f) in &w.config.filters {
        let Filter::ForwardAuth(fa) = f else {
            continue;
        };
        let Some(span) = w.filters.get(name).and_then(|at| at.auth_pool.clone()) else {
            continue;
        };
        if !w.config.pools.contains_key(&fa.pool) {
            let existing: Vec<&str> = w.config.pools.keys().map(String::as_str).collect();
            sink.error(span, missing("pool", "pools", &fa.pool, existing));
        }
    }
}
