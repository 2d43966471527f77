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

use crate::cert_error::CertError;
use crate::identity::Identity;
use crate::sni::Resolver;

/// Where one certificate pair comes from: two files, or PEM text held in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairSource {
    /// The chain's file; for a pair in memory, what names it in logs and metrics
    /// (`certificates/NAME`).
    pub cert: PathBuf,
    pub key: PathBuf,
    /// Answers clients without SNI or with a name no certificate has.
    pub default: bool,
    /// The pair itself, when it comes from the config rather than from files: it changes
    /// only with the config, never by [`LiveCertificates::reload`]. Its dates are not
    /// checked here: the config refused it expired when it was written, and one that
    /// expires while stored is served on (clients refuse it) rather than keep weir from
    /// starting.
    pub pem: Option<Arc<Pem>>,
}

impl PairSource {
    /// A pair of files.
    pub fn files(cert: PathBuf, key: PathBuf, default: bool) -> PairSource {
        PairSource {
            cert,
            key,
            default,
            pem: None,
        }
    }

    /// A pair held in memory, named `name` (for messages, as `NAME/cert_pem`).
    pub fn in_memory(name: &str, cert_pem: String, key_pem: String, default: bool) -> PairSource {
        PairSource {
            cert: PathBuf::from(name),
            key: PathBuf::from(name),
            default,
            pem: Some(Arc::new(Pem {
                cert: cert_pem,
                key: key_pem,
            })),
        }
    }

    /// Whether the pair is files (watched and reloaded) rather than PEM in memory.
    pub fn is_files(&self) -> bool {
        self.pem.is_none()
    }

    fn load(&self, now: SystemTime) -> Result<Identity, CertError> {
        match &self.pem {
            None => Identity::load(&self.cert, &self.key, now),
            Some(p) => Identity::from_pem(
                &p.cert,
                &p.key,
                &self.cert.join("cert_pem"),
                &self.key.join("key_pem"),
                None,
            ),
        }
    }
}

/// A certificate chain and its private key as PEM text. Its `Debug` leaves the key out.
#[derive(Clone, PartialEq, Eq)]
pub struct Pem {
    pub cert: String,
    pub key: String,
}

impl std::fmt::Debug for Pem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pem")
            .field("cert", &self.cert.len())
            .finish_non_exhaustive()
    }
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
            match s.load(now) {
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

    /// Reads every pair of files again (pairs in memory stay as they are). New handshakes
    /// use the result at once; handshakes under way keep what they started with.
    pub fn reload(&self, now: SystemTime) -> Reloaded {
        let old = self.current.load_full();
        let mut out = Reloaded::default();
        let identities = self
            .sources
            .iter()
            .zip(&old.identities)
            .enumerate()
            .map(|(i, (s, before))| match s.is_files().then(|| s.load(now)) {
                None => before.clone(),
                Some(r) => match r {
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
            })
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
