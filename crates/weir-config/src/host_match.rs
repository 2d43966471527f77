//! A route's host pattern (`host`, `sni`): an exact name or a `*.` suffix. Its own file
//! because the model (model.rs) holds it and the host reader (host.rs) makes it.

/// A route's host pattern, lower-cased, without port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HostMatch {
    /// `lb.foo.com`
    Exact(String),
    /// `*.foo.com`, stored as the suffix `.foo.com`; matches `a.foo.com`,
    /// `a.b.foo.com`, not `foo.com`.
    Suffix(String),
}
