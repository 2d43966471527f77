//! `[filters.NAME]`: the named, reusable steps of a route's chain (`filters = [...]` on a
//! route). Each kind is a file here with its model and its reader; `read` dispatches on
//! `kind`, `check` holds the rules that span tables (chains name filters that exist, once).

mod basic_auth;
mod body_limit;
mod compress;
mod cors;
mod error_pages;
mod forward_auth;
mod headers;
pub mod htpasswd;
mod ip;
mod plain_pattern;
mod redirect;
mod regex;
mod rewrite;
mod template;

use crate::read::{self, Fields, Sink, Span};
use crate::walk::Walked;

pub use basic_auth::BasicAuth;
pub use body_limit::BodyLimit;
pub use compress::{Compress, Encoding};
pub use cors::{normalize_origin, Cors, Names, OriginPattern, SAFELISTED_HEADERS};
pub use error_pages::{read_page, ErrorPages, Page, MAX_PAGE};
pub use forward_auth::ForwardAuth;
pub use headers::{HeaderOps, HeaderRules};
pub use ip::IpList;
pub use redirect::{Redirect, RedirectScheme};
pub use regex::{PathRegex, PathRewrite};
pub use rewrite::Rewrite;
pub use template::{Piece, Template, Var};

/// The filter kinds: one line each, `"kind" => Variant(Model) = reader`. The model enum,
/// [`KINDS`], [`Filter::kind`] and the reading of `kind` come from this list, so a new kind
/// is its file here plus one line (and its runtime half in weir-filters, one line there).
macro_rules! kinds {
    ($(
        $(#[$doc:meta])*
        $kind:literal => $variant:ident($model:ty) = $read:expr;
    )+) => {
        /// One named filter: its kind and settings.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Filter {
            $($(#[$doc])* $variant($model),)+
        }

        /// `kind` as written, for each kind.
        pub const KINDS: &[&str] = &[$($kind),+];

        impl Filter {
            /// The `kind` the config names it by.
            pub fn kind(&self) -> &'static str {
                match self {
                    $(Filter::$variant(_) => $kind,)+
                }
            }
        }

        /// The settings of a filter of `kind`, read by that kind's reader; `None` for a kind
        /// that is not in the list.
        fn read_settings(
            kind: &str,
            sink: &mut Sink<'_>,
            t: &Fields<'_, '_>,
            what: &str,
            at: &mut FilterAt,
        ) -> Option<Filter> {
            match kind {
                $($kind => Some(Filter::$variant(($read)(sink, t, what, at))),)+
                _ => None,
            }
        }
    };
}

type Reader<T> = fn(&mut Sink<'_>, &Fields<'_, '_>, &str, &mut FilterAt) -> T;

kinds! {
    /// Request and response headers set, added, removed; the request id.
    "headers" => Headers(HeaderRules) = (|s, t, _, _| headers::read(s, t)) as Reader<_>;
    /// The path (prefix stripped or added, replaced, regex) and host sent upstream.
    "rewrite" => Rewrite(Rewrite) = (|s, t, _, _| rewrite::read(s, t)) as Reader<_>;
    /// An answer pointing elsewhere (scheme, host, port, path), with a 3xx status.
    "redirect" => Redirect(Redirect) = (|s, t, _, _| redirect::read(s, t)) as Reader<_>;
    /// Only these client addresses pass; others get 403.
    "ip_allow" => IpAllow(IpList) = (|s, t, _, _| ip::read(s, t)) as Reader<_>;
    /// These client addresses get 403; others pass.
    "ip_deny" => IpDeny(IpList) = (|s, t, _, _| ip::read(s, t)) as Reader<_>;
    /// The largest request body the route takes (413 past it).
    "body_limit" => BodyLimit(BodyLimit) = (|s, t, w, _| body_limit::read(s, t, w)) as Reader<_>;
    /// CORS: preflights answered, actual answers given the allow fields.
    "cors" => Cors(Cors) = (|s, t, w, _| cors::read(s, t, w)) as Reader<_>;
    /// Error answers' bodies replaced by a page (or problem+json).
    "error_pages" => ErrorPages(ErrorPages) = error_pages::read as Reader<_>;
    /// Responses encoded (gzip, brotli, zstd) as the client accepts.
    "compress" => Compress(Compress) = (|s, t, _, _| compress::read(s, t)) as Reader<_>;
    /// Requests need a user and password of an htpasswd file (401 otherwise).
    "basic_auth" => BasicAuth(BasicAuth) =
        (|s, t, w, at: &mut FilterAt| basic_auth::read(s, t, w, &mut at.users_file)) as Reader<_>;
    /// Requests are let on by an auth service's 2xx answer; any other answer is returned.
    "forward_auth" => ForwardAuth(ForwardAuth) =
        (|s, t, w, at: &mut FilterAt| forward_auth::read(s, t, w, &mut at.auth_pool)) as Reader<_>;
}

/// Where a filter was written, for rules that span tables.
#[derive(Clone)]
pub(crate) struct FilterAt {
    /// The `kind` value, when valid.
    pub kind: Option<Span>,
    /// An error_pages filter's `pool` value (it must name a pool).
    pub pool: Option<Span>,
    /// An error_pages filter's `file` value (read by `weir check`).
    pub file: Option<Span>,
    /// basic_auth's `users_file` value, read by `weir check`.
    pub users_file: Option<Span>,
    /// forward_auth's `pool` value, which must name a pool.
    pub auth_pool: Option<Span>,
}

/// Reads `[filters.NAME]`. A filter whose `kind` is missing or unknown, or whose settings do
/// not read, is reported and has no model (a route naming it fails on that alone).
pub(crate) fn read(
    sink: &mut Sink<'_>,
    name: &str,
    t: &Fields<'_, '_>,
) -> (Option<Filter>, FilterAt) {
    let mut at = FilterAt {
        kind: None,
        pool: None,
        file: None,
        users_file: None,
        auth_pool: None,
    };
    let f = read_kind(sink, name, t, &mut at);
    (f, at)
}

fn read_kind(
    sink: &mut Sink<'_>,
    name: &str,
    t: &Fields<'_, '_>,
    at: &mut FilterAt,
) -> Option<Filter> {
    let what = format!("filter `{name}`");
    // Without a known kind there is no knowing which keys belong: only `kind` is reported.
    let v = t.require(sink, "kind", &what, "\"headers\"")?;
    let kind = read::string(sink, v)?;
    let before = sink.errors();
    let Some(f) = read_settings(kind, sink, t, &what, at) else {
        let hint = crate::suggest::did_you_mean(kind, KINDS.iter().copied());
        sink.error(
            v.span(),
            format!(
                "unknown filter kind \"{kind}\"{hint} (expected one of: {})",
                KINDS.join(", ")
            ),
        );
        return None;
    };
    at.kind = Some(v.span());
    (sink.errors() == before).then_some(f)
}

/// Every key a kind takes, `kind` included.
fn keys<'a>(own: &[&'a str]) -> Vec<&'a str> {
    let mut k = vec!["kind"];
    k.extend_from_slice(own);
    k
}

/// Fields that frame the message or the connection: a filter that set, removed, forwarded
/// or copied them would make a message that reads two ways (or break the connection), so
/// no filter may name them.
const FRAMING: &[&str] = &[
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
    "host",
];

/// A field name a filter may name, lower-cased.
fn field_name(sink: &mut Sink<'_>, name: &str, span: Span) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    if http::HeaderName::from_bytes(lower.as_bytes()).is_err() {
        sink.error(span, format!("{name:?} is not a valid header name"));
        return None;
    }
    if FRAMING.contains(&lower.as_str()) {
        let why = match lower.as_str() {
            "host" => "the Host weir sends is the request's, or a rewrite filter's `host`",
            _ => "it frames the message or the connection, which weir owns",
        };
        sink.error(span, format!("a filter may not use `{name}`: {why}"));
        return None;
    }
    Some(lower)
}

/// An array of strings, each with its span; anything else is reported.
fn strings(sink: &mut Sink<'_>, v: &read::Val<'_>) -> Vec<(String, Span)> {
    let Some(a) = read::array(sink, v) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in a.iter() {
        if let Some(s) = read::string(sink, item) {
            out.push((s.to_string(), item.span()));
        }
    }
    out
}

/// A route's chain names filters that exist, each once, and only on http listeners; a
/// tcp listener's, only address lists (a connection has no request to change).
pub(crate) fn check(sink: &mut Sink<'_>, w: &Walked) {
    let cfg = &w.config;
    for (name, at) in &w.routes {
        let r = &cfg.routes[name];
        let tcp = cfg
            .listeners
            .get(&r.listener)
            .is_some_and(|l| l.protocol == crate::Protocol::Tcp);
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
        if l.protocol == crate::Protocol::Http {
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
    error_pages::check(sink, w);
    forward_auth::check(sink, w);
}

/// What the filters name outside the config, read for `weir check` and a file's load
/// (error_pages' page files, basic_auth's users files); the API's changes meet them when
/// the data plane builds the filter.
pub(crate) fn check_files(sink: &mut Sink<'_>, w: &Walked) {
    error_pages::check_files(sink, w);
    for (name, f) in &w.config.filters {
        if let (Filter::BasicAuth(b), Some(span)) =
            (f, w.filters.get(name).and_then(|a| a.users_file.as_ref()))
        {
            basic_auth::check_file(sink, b, span);
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
            sink.error(
                span.clone(),
                crate::validate::missing("filter", "filters", f, existing),
            );
        }
    }
}
