//! Telling a backend's refusal of the client's certificate from other failures: in TLS
//! 1.3 it arrives after the handshake, where the first answer would.

use std::io;

/// Whether `e` is the backend refusing the handshake after rustls considered it done: in
/// TLS 1.3 the client finishes first, so a backend that rejects the client's certificate
/// (or wants one) says so with an alert that arrives where the first answer would.
pub fn handshake_refused(e: &io::Error) -> bool {
    use rustls::AlertDescription as A;
    let Some(rustls::Error::AlertReceived(alert)) =
        e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>())
    else {
        return false;
    };
    matches!(
        alert,
        A::CertificateRequired
            | A::BadCertificate
            | A::UnsupportedCertificate
            | A::CertificateRevoked
            | A::CertificateExpired
            | A::CertificateUnknown
            | A::UnknownCA
            | A::AccessDenied
            | A::HandshakeFailure
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handshake_error::HandshakeError;
    use rustls::CertificateError;

    #[test]
    fn handshake_errors_keep_rustls_reasons_and_spot_refusals() {
        let wrapped = |e: rustls::Error| io::Error::new(io::ErrorKind::InvalidData, e);
        let e = HandshakeError::from(wrapped(rustls::Error::InvalidCertificate(
            CertificateError::UnknownIssuer,
        )));
        assert!(matches!(e, HandshakeError::Tls(_)));
        assert!(e.to_string().contains("`ca`"), "{e}");
        let eof = HandshakeError::from(io::Error::from(io::ErrorKind::UnexpectedEof));
        assert!(eof.to_string().contains("does it speak TLS"), "{eof}");

        let alert = |a| wrapped(rustls::Error::AlertReceived(a));
        assert!(handshake_refused(&alert(
            rustls::AlertDescription::CertificateRequired
        )));
        assert!(handshake_refused(&alert(
            rustls::AlertDescription::UnknownCA
        )));
        assert!(!handshake_refused(&alert(
            rustls::AlertDescription::CloseNotify
        )));
        assert!(!handshake_refused(&io::Error::from(
            io::ErrorKind::ConnectionReset
        )));
    }
}
