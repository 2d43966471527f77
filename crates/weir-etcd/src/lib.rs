//! etcd as weir's config source (`weir run --store etcd://...`): every replica
//! pointed at the same prefix serves the same configuration.
//!
//! - `url.rs`: the store URL; `options.rs`: how to reach etcd; `connect_error.rs`: why it
//!   could not be reached.
//! - `layout.rs`: one key per resource, its version the key's `mod_revision`, and the revision
//!   key every commit compares, so commits from all replicas go one at a time.
//! - `source.rs`: [`EtcdSource`], weir-control's `Source` over etcd: connecting, and what the
//!   control plane asks of a source (reads from the replica's copy, leases, the cache).
//! - `members.rs`: a client per etcd member, calls going round them and failing over to
//!   the next when one dies or hangs, each call within `--store-timeout`.
//! - `read.rs`: a full read of the prefix, and the first config (etcd's, or the cache).
//! - `commit.rs`: a commit as one etcd transaction, validated against the whole resulting
//!   config, started over when another replica committed first; `outcome.rs`: that
//!   transaction sent, and found out about when its answer was lost (never applied twice).
//! - `watch.rs`: the watch that brings other replicas' commits in, in revision order.
//! - `login.rs` (etcd's users), `problem.rs` (whether etcd answers), `cache.rs` (the last
//!   applied config on disk).
//! - `brief.rs`: an etcd error in a few words; `why.rs`: why etcd could not be read, in words
//!   an operator can act on (TLS mistakes are told apart by a probe handshake of its own).
//!
//! Nothing here is on the request path: the data plane runs the last applied snapshot whatever
//! etcd does.

mod brief;
mod cache;
mod cache_error;
mod commit;
mod connect_error;
mod layout;
mod login;
mod members;
mod options;
mod outcome;
mod problem;
mod read;
mod source;
mod url;
mod watch;
mod why;

pub use connect_error::ConnectError;
pub use options::{Options, DEFAULT_TIMEOUT};
pub use source::EtcdSource;
pub use url::{StoreUrl, UrlError};
