//! weir's certificates and TLS settings, independent of sockets: what a TLS listener
//! presents and how it is configured, and what a pool trusts upstream.
//!
//! - `cert_error`: why a certificate pair cannot be used;
//! - `pem`: reading a certificate chain and its key from PEM files, bounded;
//! - `identity`: one certificate pair checked before use (key matches, dates, its names);
//! - `sni`: which certificate answers a server name (exact, then `*.` wildcard, then the
//!   default), and whether a host is covered at all (for `weir check`);
//! - `live`: the certificates a listener serves now, reloaded in place: a pair that fails
//!   to load keeps the one before it;
//! - `server`: a listener's settings to a rustls `ServerConfig`;
//! - `client`: a pool's upstream settings to a rustls `ClientConfig`;
//! - `client_identity`: what a verified client certificate says, escaped for a backend;
//! - `hello`: the server name in a ClientHello peeked off an undecrypted connection;
//! - `provider`: the one crypto provider compiled in.
//!
//! Nothing cryptographic is written here: rustls and its provider do all of it (and the
//! sha2 crate a client certificate's fingerprint).

pub mod cert_error;
pub mod client;
pub mod client_identity;
pub mod hello;
pub mod identity;
pub mod live;
pub mod pem;
pub mod provider;
pub mod server;
pub mod sni;

pub use cert_error::CertError;
pub use client::{ClientSettings, Trust};
pub use client_identity::ClientIdentity;
pub use hello::Hello;
pub use identity::Identity;
pub use live::{LiveCertificates, PairSource, Pem, Reloaded};
pub use server::{ClientAuth, MinVersion, ServerSettings, SettingsError};
pub use sni::Resolver;
