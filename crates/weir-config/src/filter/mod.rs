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

/// One named filter: its kind and settings.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    /// Request and response headers set, added, removed; the request id.
    Headers(HeaderRules),
    /// The path (prefix stripped or added, replaced, regex) and host sent upstream.
    Rewrite(Rewrite),
    /// An answer pointing elsewhere (scheme, host, port, path), with a 3xx status.
    Redirect(Redirect),
    /// Only these client addresses pass; others get 403.
    IpAllow(IpList),
    /// These client addresses get 403; others pass.
    IpDeny(IpList),
    /// The largest request body the route takes (413 past it).
    BodyLimit(BodyLimit),
    /// CORS: preflights answered, actual answers given the allow fields.
    Cors(Cors),
    /// Error answers' bodies replaced by a page (or problem+json).
    ErrorPages(ErrorPages),
    /// Responses encoded (gzip, brotli, zstd) as the client accepts.
    Compress(Compress),
    /// Requests need a user and password of an htpasswd file (401 otherwise).
    BasicAuth(BasicAuth),
    /// Requests are let on by an auth service's 2xx answer; any other answer is returned.
    ForwardAuth(ForwardAuth),
}

/// `kind` as written, for each kind.
pub const KINDS: &[&str] = &[
    "headers",
    "rewrite",
    "redirect",
    "ip_allow",
    "ip_deny",
    "body_limit",
    "cors",
    "error_pages",
    "compress",
    "basic_auth",
    "forward_auth",
];

impl Filter {
    /// The `kind` the config names it by.
    pub fn kind(&self) -> &'static str {
        match self {
            Filter::Headers(_) => "headers",
            Filter::Rewrite(_) => "rewrite",
            Filter::Redirect(_) => "redirect",
            Filter::IpAllow(_) => "ip_allow",
            Filter::IpDeny(_) => "ip_deny",
            Filter::BodyLimit(_) => "body_limit",
            Filter::Cors(_) => "cors",
            Filter::ErrorPages(_) => "error_pages",
            Filter::Compress(_) => "compress",
            Filter::BasicAuth(_) => "basic_auth",
            Filter::ForwardAuth(_) => "forward_auth",
        }
    }
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
    let f = match kind {
        "headers" => Filter::Headers(headers::read(sink, t)),
        "rewrite" => Filter::Rewrite(rewrite::read(sink, t)),
        "redirect" => Filter::Redirect(redirect::read(sink, t)),
        "ip_allow" => Filter::IpAllow(ip::read(sink, t)),
        "ip_deny" => Filter::IpDeny(ip::read(sink, t)),
        "body_limit" => Filter::BodyLimit(body_limit::read(sink, t, &what)),
        "cors" => Filter::Cors(cors::read(sink, t, &what)),
        "error_pages" => Filter::ErrorPages(error_pages::read(sink, t, &what, at)),
        "compress" => Filter::Compress(compress::read(sink, t)),
        "basic_auth" => Filter::BasicAuth(basic_auth::read(sink, t, &what, &mut at.users_file)),
        "forward_auth" => {
            Filter::ForwardAuth(forward_auth::read(sink, t, &what, &mut at.auth_pool))
        }
        other => {
            let hint = crate::suggest::did_you_mean(other, KINDS.iter().copied());
            sink.error(
                v.span(),
                format!(
                    "unknown filter kind \"{other}\"{hint} (expected one of: {})",
                    KINDS.join(", ")
                ),
            );
            return None;
        }
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
