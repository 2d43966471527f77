//! The crypto provider: ring or aws-lc-rs, chosen at build time by a cargo feature so both
//! can be measured side by side in bench/. Everything in weir that needs one asks here.

use std::sync::Arc;

use rustls::crypto::CryptoProvider;

#[cfg(all(feature = "ring", not(feature = "aws-lc-rs")))]
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

#[cfg(feature = "aws-lc-rs")]
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// Session tickets with keys that rotate (every 6 h; a ticket lives 12 h), shared by every
/// connection of the config it is given to, so any thread can resume any session.
pub fn ticketer() -> Result<Arc<dyn rustls::server::ProducesTickets>, rustls::Error> {
    #[cfg(all(feature = "ring", not(feature = "aws-lc-rs")))]
    return rustls::crypto::ring::Ticketer::new();
    #[cfg(feature = "aws-lc-rs")]
    return rustls::crypto::aws_lc_rs::Ticketer::new();
}

/// The provider's name, for `weir version` and the benchmark notes.
pub const NAME: &str = if cfg!(feature = "aws-lc-rs") {
    "aws-lc-rs"
} else {
    "ring"
};
