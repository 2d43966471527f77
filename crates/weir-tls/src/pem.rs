//! Reading a certificate chain and its private key from PEM files. A file is read only up
//! to a bound: a certificate chain is a few KiB, and a path that names something endless
//! (a device, a FIFO) must not take memory with it.

use std::io::Read;
use std::path::Path;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::cert_error::CertError;

/// The largest PEM file read (a long chain with many intermediates is ~20 KiB).
pub const MAX_PEM_BYTES: u64 = 1 << 20;

/// The chain in `cert` (leaf first, then intermediates) and the key in `key`.
pub fn read_pair(
    cert: &Path,
    key: &Path,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), CertError> {
    let chain = parse_chain(&read(cert)?, cert)?;
    let key_der = parse_key(&read(key)?, key)?;
    Ok((chain, key_der))
}

pub fn parse_chain(pem: &[u8], path: &Path) -> Result<Vec<CertificateDer<'static>>, CertError> {
    let chain = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CertError::BadPem {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(CertError::NoCertificate(path.display().to_string()));
    }
    Ok(chain)
}

pub fn parse_key(pem: &[u8], path: &Path) -> Result<PrivateKeyDer<'static>, CertError> {
    PrivateKeyDer::from_pem_slice(pem).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => CertError::NoKey(path.display().to_string()),
        e => CertError::BadPem {
            path: path.display().to_string(),
            reason: e.to_string(),
        },
    })
}

/// A PEM file's bytes, at most [`MAX_PEM_BYTES`].
pub fn read(path: &Path) -> Result<Vec<u8>, CertError> {
    let io = |source| CertError::Read {
        path: path.display().to_string(),
        source,
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(io)?
        .take(MAX_PEM_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_PEM_BYTES {
        return Err(CertError::TooLarge {
            path: path.display().to_string(),
            limit: MAX_PEM_BYTES,
        });
    }
    Ok(bytes)
}
