//! etcd as weir's config source (`weir run --store etcd://...`, issue 19): every replica
//! pointed at the same prefix serves the same configuration.
//!
//! - `url.rs`: the store URL.
//! - `layout.rs`: one key per resource, its version the key's `mod_revision`, and the revision
//!   key every commit compares, so commits from all replicas go one at a time.
//! - `source.rs`: [`EtcdSource`], weir-control's `Source` over etcd: the first read, commits as
//!   one etcd transaction each (validated against the whole resulting config), and the watch
//!   that brings other replicas' commits in.
//!
//! Nothing here is on the request path: the data plane runs the last applied snapshot whatever
//! etcd does.

mod cache;
mod layout;
mod source;
mod url;

pub use source::{ConnectError, EtcdSource, Options};
pub use url::{StoreUrl, UrlError};
