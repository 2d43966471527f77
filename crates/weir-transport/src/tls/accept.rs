//! A TLS handshake on an accepted connection, bounded by the listener's
//! `handshake_timeout`, counted by result (`metrics::tls::Outcome`).
//!
//! The ClientHello is read through rustls' `Acceptor` before a config is chosen, so weir
//! sees the server name first: a name no certificate covers (and no default) is refused
//! with `unrecognized_name` (RFC 6066 §3), which rustls' own resolver path would answer
//! with `access_denied`. First bytes that are not a TLS record are answered, when they
//! look like an HTTP request, with a plain-text 400 saying so (as nginx does), and closed.

use std::io;
use std::sync::Arc;

use rustls::server::Acceptor;
use rustls::HandshakeKind;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_rustls::StartHandshake;
use tracing::debug;

use super::server::TlsServer;
use super::stream::{TlsConn, TryWrite};
use crate::tls::metrics::{Outcome, Version};
use crate::tls_info::{ClientCert, TlsInfo};

/// A TLS record's first byte for a handshake message.
const HANDSHAKE_RECORD: u8 = 0x16;

const PLAIN_HTTP_BODY: &str =
    "400 Bad Request: this port speaks HTTPS, and a plain HTTP request was sent\n";

/// Runs the handshake; `None` if it failed (already counted and logged).
pub async fn handshake(sock: TcpStream, server: &TlsServer) -> Option<TlsConn> {
    let r = tokio::time::timeout(server.handshake_timeout, run(sock, server)).await;
    let (version, outcome, conn) = match r {
        Ok(Ok((conn, version))) => {
            let outcome = match conn.info.resumed {
                true => Outcome::Resumed,
                false => Outcome::Ok,
            };
            (version, outcome, Some(conn))
        }
        Ok(Err(f)) => {
            debug!(
                listener = &*server.listener,
                result = f.outcome.as_str(),
                "TLS handshake failed: {}",
                f.detail
            );
            (f.version, f.outcome, None)
        }
        Err(_) => (Version::Unknown, Outcome::Timeout, None),
    };
    server.metrics.handshake(version, outcome);
    conn
}

struct Failed {
    version: Version,
    outcome: Outcome,
    detail: String,
}

fn failed(outcome: Outcome, detail: impl ToString) -> Failed {
    Failed {
        version: Version::Unknown,
        outcome,
        detail: detail.to_string(),
    }
}

async fn run(mut sock: TcpStream, server: &TlsServer) -> Result<(TlsConn, Version), Failed> {
    let mut first = [0u8; 8];
    let n = sock
        .peek(&mut first)
        .await
        .map_err(|e| failed(Outcome::ClientClosed, e))?;
    if n == 0 {
        return Err(failed(Outcome::ClientClosed, "closed before a ClientHello"));
    }
    if first[0] != HANDSHAKE_RECORD {
        if looks_like_http(&first[..n]) {
            let answer = format!(
                "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\nx-weir-reason: not_tls\r\n\r\n{PLAIN_HTTP_BODY}",
                PLAIN_HTTP_BODY.len()
            );
            let _ = sock.write_all(answer.as_bytes()).await;
        }
        return Err(failed(
            Outcome::NotTls,
            "the first bytes are not a TLS handshake",
        ));
    }

    let mut acceptor = Acceptor::default();
    let accepted = loop {
        sock.readable()
            .await
            .map_err(|e| failed(Outcome::ClientClosed, e))?;
        match acceptor.read_tls(&mut TryRead(&sock)) {
            Ok(0) => return Err(failed(Outcome::ClientClosed, "closed mid-ClientHello")),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(classify_io(e)),
        }
        match acceptor.accept() {
            Ok(None) => continue,
            Ok(Some(a)) => break a,
            Err((e, mut alert)) => {
                let _ = alert.write_all(&mut TryWrite(&sock));
                return Err(classify(&e));
            }
        }
    };
    let sni: Option<Arc<str>> = accepted.client_hello().server_name().map(Into::into);
    if server
        .certs
        .current()
        .resolver
        .pick(sni.as_deref())
        .is_none()
    {
        let _ = sock
            .write_all(&weir_tls::hello::UNRECOGNIZED_NAME_ALERT)
            .await;
        return Err(failed(
            Outcome::NoCertificateForSni,
            format!(
                "no certificate for {:?} and no default",
                sni.as_deref().unwrap_or("")
            ),
        ));
    }
    let tls = StartHandshake::from_parts(accepted, sock)
        .into_stream(server.config.load_full())
        .await
        .map_err(classify_io)?;
    let session = tls.get_ref().1;
    let version = Version::of(session.protocol_version());
    let info = TlsInfo {
        version: version.as_str(),
        sni,
        alpn: session.alpn_protocol().map(Into::into),
        client: session
            .peer_certificates()
            .and_then(|c| c.first())
            .and_then(|leaf| client_cert(&server.listener, leaf)),
        resumed: session.handshake_kind() == Some(HandshakeKind::Resumed),
    };
    Ok((TlsConn::new(tls, info), version))
}

/// The verified client certificate as backends get it. One whose subject or names hold
/// control characters is still passed on (encoded): that is logged, once per period.
fn client_cert(listener: &str, leaf: &[u8]) -> Option<Arc<ClientCert>> {
    let Some((cert, had_control)) = ClientCert::of(leaf) else {
        weir_metrics::warn_limited!(
            listener,
            listener,
            "a verified client certificate does not parse; no identity passed on"
        );
        return None;
    };
    if had_control {
        weir_metrics::warn_limited!(
            listener,
            listener,
            subject = ?cert.subject,
            "a client certificate's subject or names hold control characters; passed on encoded"
        );
    }
    Some(Arc::new(cert))
}

/// An HTTP/1 method and a space: someone spoke plain HTTP to the TLS port.
fn looks_like_http(b: &[u8]) -> bool {
    let word = b.iter().take_while(|c| c.is_ascii_uppercase()).count();
    (3..=7).contains(&word) && b.get(word) == Some(&b' ')
}

fn classify_io(e: io::Error) -> Failed {
    if let Some(tls) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        return classify(tls);
    }
    failed(Outcome::ClientClosed, e)
}

fn classify(e: &rustls::Error) -> Failed {
    use rustls::{Error as E, PeerIncompatible as P};
    let outcome = match e {
        E::PeerIncompatible(
            P::Tls12NotOffered
            | P::Tls12NotOfferedOrEnabled
            | P::SupportedVersionsExtensionRequired
            | P::ServerDoesNotSupportTls12Or13,
        ) => Outcome::ProtocolVersion,
        E::NoApplicationProtocol => Outcome::NoApplicationProtocol,
        E::NoCertificatesPresented | E::InvalidCertificate(_) => Outcome::BadClientCertificate,
        E::InvalidMessage(_)
        | E::InappropriateMessage { .. }
        | E::InappropriateHandshakeMessage { .. } => Outcome::BadMessage,
        E::AlertReceived(_) => Outcome::AlertReceived,
        _ => Outcome::HandshakeFailure,
    };
    failed(outcome, e)
}

/// `io::Read` over a non-blocking socket, for feeding rustls without an await.
struct TryRead<'a>(&'a TcpStream);

impl io::Read for TryRead<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.try_read(buf)
    }
}
