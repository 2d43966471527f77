//! The certificates a TLS listener serves now. They are read again when their files change
//! (a rename-replace, a Kubernetes secret's symlink swap: whoever watches calls
//! [`LiveCertificates::reload`]); each pair that reads and checks cleanly replaces the one
//! before it for new handshakes, and one that does not keeps the old pair and says why.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use arc_swap::ArcSwap;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use crate::identity::{CertError, Identity};
use crate::sni::Resolver;

/// Where one certificate pair comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairSource {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// Answers clients without SNI or with a name no certificate has.
    pub default: bool,
}

/// The pairs in use and the resolver built from them.
#[derive(Debug)]
pub struct Loaded {
    pub identities: Vec<Identity>,
    pub resolver: Resolver,
}

#[derive(Debug)]
pub struct LiveCertificates {
    sources: Vec<PairSource>,
    current: ArcSwap<Loaded>,
}

/// What a reload did.
#[derive(Debug, Default)]
pub struct Reloaded {
    /// Pairs whose certificate changed.
    pub replaced: Vec<usize>,
    /// Pairs that failed to load and were kept as they were, with the reason.
    pub kept: Vec<(usize, CertError)>,
}

impl LiveCertificates {
    /// Loads every pair; at start there is no old pair to keep, so any failure is an error
    /// (with the index of the pair that failed).
    pub fn load(
        sources: Vec<PairSource>,
        now: SystemTime,
    ) -> Result<LiveCertificates, Vec<(usize, CertError)>> {
        let mut identities = Vec::with_capacity(sources.len());
        let mut errors = Vec::new();
        for (i, s) in sources.iter().enumerate() {
            match Identity::load(&s.cert, &s.key, now) {
                Ok(id) => identities.push(id),
                Err(e) => errors.push((i, e)),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let loaded = build(&sources, identities);
        Ok(LiveCertificates {
            sources,
            current: ArcSwap::from_pointee(loaded),
        })
    }

    /// Reads every pair again. New handshakes use the result at once; handshakes under way
    /// keep what they started with.
    pub fn reload(&self, now: SystemTime) -> Reloaded {
        let old = self.current.load_full();
        let mut out = Reloaded::default();
        let identities = self
            .sources
            .iter()
            .zip(&old.identities)
            .enumerate()
            .map(
                |(i, (s, before))| match Identity::load(&s.cert, &s.key, now) {
                    Ok(id) => {
                        if id.key.cert != before.key.cert {
                            out.replaced.push(i);
                        }
                        id
                    }
                    Err(e) => {
                        out.kept.push((i, e));
                        before.clone()
                    }
                },
            )
            .collect();
        if !out.replaced.is_empty() {
            self.current
                .store(Arc::new(build(&self.sources, identities)));
        }
        out
    }

    pub fn sources(&self) -> &[PairSource] {
        &self.sources
    }

    /// What is served now (for the dashboard, metrics and `weir check`).
    pub fn current(&self) -> Arc<Loaded> {
        self.current.load_full()
    }
}

fn build(sources: &[PairSource], identities: Vec<Identity>) -> Loaded {
    let resolver = Resolver::new(identities.iter().zip(sources.iter().map(|s| s.default)));
    Loaded {
        identities,
        resolver,
    }
}

impl ResolvesServerCert for LiveCertificates {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current
            .load()
            .resolver
            .pick(hello.server_name())
            .cloned()
    }
}
