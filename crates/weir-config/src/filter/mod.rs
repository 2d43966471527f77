//! `[filters.NAME]`: the named, reusable steps of a route's chain (`filters = [...]` on a
//! route). Each kind is a file here with its model and its reader; `read` dispatches on
//! `kind`. The rules that span tables (chains name filters that exist, once) are in
//! filter_check.rs, which reads the walked config.

mod at;
mod basic_auth;
mod body_limit;
mod compress;
mod cors;
mod error_pages;
mod fields;
mod forward_auth;
mod headers;
pub mod htpasswd;
mod ip;
mod plain_pattern;
mod redirect;
mod regex;
mod rewrite;
mod template;

use crate::read::{self, Fields, Sink};

pub(crate) use at::FilterAt;
pub(crate) use basic_auth::check_file as check_users_file;
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
