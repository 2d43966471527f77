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
