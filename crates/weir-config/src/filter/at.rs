//! Where a filter was written, for the rules that span tables (filter_check.rs) and the
//! API's resources (resources.rs). Its own file because the reader (mod.rs) and a kind's
//! reader (error_pages.rs) fill it in.

use crate::read::Span;

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
