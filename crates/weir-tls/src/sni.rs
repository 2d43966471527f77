//! Which certificate answers a TLS client: by the server name it sent (SNI), an exact name
//! first, then a `*.` wildcard one label deep (RFC 6125 §6.4.3: `*.example.com` covers
//! `a.example.com`, not `example.com` nor `a.b.example.com`), then the default; with no
//! match and no default, none (the handshake is refused).

use std::collections::HashMap;
use std::sync::Arc;

use rustls::sign::CertifiedKey;

use crate::identity::Identity;

#[derive(Debug, Default)]
pub struct Resolver {
    exact: HashMap<Box<str>, usize>,
    /// Keyed by the wildcard's parent: `*.example.com` under `example.com`.
    wildcard: HashMap<Box<str>, usize>,
    default: Option<usize>,
    keys: Vec<Arc<CertifiedKey>>,
}

impl Resolver {
    /// `pairs` in configuration order: where two certificates name the same host, the one
    /// listed first answers it.
    pub fn new<'a>(pairs: impl IntoIterator<Item = (&'a Identity, bool)>) -> Resolver {
        let mut r = Resolver::default();
        for (i, (id, default)) in pairs.into_iter().enumerate() {
            r.keys.push(id.key.clone());
            if default && r.default.is_none() {
                r.default = Some(i);
            }
            for name in &id.names {
                let table = match name.strip_prefix("*.") {
                    Some(parent) => r.wildcard.entry(parent.into()),
                    None => r.exact.entry(name.as_str().into()),
                };
                table.or_insert(i);
            }
        }
        r
    }

    /// The certificate for a client that sent `sni` (or none).
    pub fn pick(&self, sni: Option<&str>) -> Option<&Arc<CertifiedKey>> {
        let found = sni.and_then(|name| self.named(name));
        found.or(self.default).map(|i| &self.keys[i])
    }

    /// Whether a certificate names `host` (not counting the default): the `weir check`
    /// warning for a route host its TLS listener cannot present a certificate for. A route
    /// host `*.example.com` is covered by the same wildcard.
    pub fn covers(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        match host.strip_prefix("*.") {
            Some(parent) => self.wildcard.contains_key(parent),
            None => self.named(&host).is_some(),
        }
    }

    fn named(&self, name: &str) -> Option<usize> {
        // Clients send lowercase names almost always; only fold when needed.
        let lowered;
        let mut name = name.strip_suffix('.').unwrap_or(name);
        if name.bytes().any(|b| b.is_ascii_uppercase()) {
            lowered = name.to_ascii_lowercase();
            name = &lowered;
        }
        if let Some(&i) = self.exact.get(name) {
            return Some(i);
        }
        let (_, parent) = name.split_once('.')?;
        self.wildcard.get(parent).copied()
    }
}
