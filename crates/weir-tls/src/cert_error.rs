//! Why a certificate pair cannot be used, each case naming the file and what a user would
//! fix. Its own file because reading PEM (`pem`) and checking a pair (`identity`) both
//! return it, and `identity` reads through `pem`.

/// Why a certificate pair cannot be used. Each names the file and what a user would fix.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is larger than {limit} bytes; a PEM certificate chain or key is a few KiB")]
    TooLarge { path: String, limit: u64 },
    #[error("{path} is not valid PEM: {reason}")]
    BadPem { path: String, reason: String },
    #[error("{0} holds no certificate (expected a PEM block BEGIN CERTIFICATE)")]
    NoCertificate(String),
    #[error("{0} holds no private key (expected a PEM block BEGIN PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY)")]
    NoKey(String),
    #[error("the certificate in {path} cannot be parsed: {reason}")]
    BadCertificate { path: String, reason: String },
    #[error("the key in {path} cannot be used: {reason}")]
    UnsupportedKey { path: String, reason: String },
    #[error("the key in {key} does not match the certificate in {cert}")]
    KeyMismatch { cert: String, key: String },
    #[error("the certificate in {path} expired on {not_after}")]
    Expired { path: String, not_after: String },
    #[error("the certificate in {path} is not valid before {not_before}")]
    NotYetValid { path: String, not_before: String },
}
