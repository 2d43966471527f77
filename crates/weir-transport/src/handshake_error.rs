//! Why a TLS handshake with an endpoint failed, with what to check (its own file so that
//! connecting and the pool's TLS both name it without importing each other).

use std::fmt;
use std::io;

use rustls::CertificateError;

/// Why a handshake with an endpoint failed, with what to check.
#[derive(Debug)]
pub enum HandshakeError {
    /// rustls refused it: the endpoint's certificate, an alert the endpoint sent (e.g. it
    /// wanted a client certificate), or bytes that are not TLS.
    Tls(rustls::Error),
    /// The connection broke or closed during the handshake.
    Io(io::Error),
}

impl From<io::Error> for HandshakeError {
    fn from(e: io::Error) -> Self {
        // tokio-rustls hands rustls's error over inside an io::Error.
        if e.get_ref().is_some_and(|i| i.is::<rustls::Error>()) {
            let inner = e.into_inner().expect("checked above");
            match inner.downcast::<rustls::Error>() {
                Ok(tls) => return HandshakeError::Tls(*tls),
                Err(other) => return HandshakeError::Io(io::Error::other(other)),
            }
        }
        HandshakeError::Io(e)
    }
}

impl fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandshakeError::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => write!(
                f,
                "the endpoint closed the connection during the handshake (does it speak TLS? does it want a client certificate?)"
            ),
            HandshakeError::Io(e) => e.fmt(f),
            HandshakeError::Tls(e) => {
                e.fmt(f)?;
                let hint = match e {
                    rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
                        "; no CA in the pool's `ca` (or the system's roots, without one) signed it"
                    }
                    rustls::Error::InvalidCertificate(
                        CertificateError::NotValidForName
                        | CertificateError::NotValidForNameContext { .. },
                    ) => {
                        "; set the pool's tls `server_name` to a name the certificate holds (without it, the endpoint's IP address is verified)"
                    }
                    rustls::Error::InvalidMessage(_) => " (does the endpoint speak TLS?)",
                    _ => "",
                };
                f.write_str(hint)
            }
        }
    }
}

impl std::error::Error for HandshakeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HandshakeError::Tls(e) => Some(e),
            HandshakeError::Io(e) => Some(e),
        }
    }
}
