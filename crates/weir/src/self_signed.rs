//! A self-signed certificate and key for trying TLS out (`weir cert`, the demo's HTTPS
//! listener), made by rcgen: an ECDSA P-256 key, the names as subjectAltNames (IP
//! addresses as IP SANs), `CN=` the first name, valid from a day ago (a clock a little
//! behind still accepts it) for the days asked.

use rcgen::{CertificateParams, DnType, KeyPair};
use time::{Duration, OffsetDateTime};

/// A certificate and its key, PEM-encoded.
pub struct Pair {
    pub cert_pem: String,
    pub key_pem: String,
}

/// Makes a pair for `names` (DNS names, `*.` wildcards, IP addresses), valid for `days`.
pub fn make(names: &[&str], days: u32) -> Result<Pair, rcgen::Error> {
    let mut p = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())?;
    if let Some(cn) = names.first() {
        p.distinguished_name.push(DnType::CommonName, *cn);
    }
    let now = OffsetDateTime::now_utc();
    p.not_before = now - Duration::days(1);
    p.not_after = now + Duration::days(days.into());
    let key = KeyPair::generate()?;
    let cert = p.self_signed(&key)?;
    Ok(Pair {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}
