//! etcd as weir's config source (`weir run --store etcd://...`, issue 19): every replica
//! pointed at the same prefix serves the same configuration.
//!
//! - `url.rs`: the store URL.
//! - `layout.rs`: one key per resource, its version the key's `mod_revision`, and the revision
//!   key every commit compares, so commits from all replicas go one at a time.
//! - `source.rs`: [`EtcdSource`], weir-control's `Source` over etcd: the first read, commits as
//!   one etcd transaction each (validated against the whole resulting config), and the watch
//!   that brings other replicas' commits in.
//! - `why.rs`: why etcd could not be read, in words an operator can act on (TLS mistakes are
//!   told apart by a probe handshake of its own).
//!
//! Nothing here is on the request path: the data plane runs the last applied snapshot whatever
//! etcd does.

mod cache;
mod layout;
mod source;
mod url;
mod why;

pub use source::{ConnectError, EtcdSource, Options};
pub use url::{StoreUrl, UrlError};
