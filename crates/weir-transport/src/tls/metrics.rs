//! TLS termination's counters: handshakes by listener, protocol version and result
//! (`weir_tls_handshakes_total`), certificate reloads (`weir_tls_certificate_reloads_total`),
//! and what each listener's certificates say about their expiry (read at scrape time).
//! Kept by listener name across snapshots, like the request counters.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, LazyLock, Mutex};

/// How a handshake ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A full handshake.
    Ok,
    /// A resumed session (ticket or session id).
    Resumed,
    /// No certificate for the client's server name and no default: refused with
    /// `unrecognized_name`.
    NoCertificateForSni,
    /// No TLS version in common (`min_version`, or an old client).
    ProtocolVersion,
    /// The client offered ALPN protocols and none is served.
    NoApplicationProtocol,
    /// `client_auth`: no certificate, or one that does not verify.
    BadClientCertificate,
    /// A malformed or unexpected handshake message.
    BadMessage,
    /// The client refused the handshake with an alert (e.g. it does not trust the
    /// certificate).
    AlertReceived,
    /// Any other failure (no cipher suite or group in common, ...).
    HandshakeFailure,
    /// The client closed or reset the connection mid-handshake.
    ClientClosed,
    /// Not done within `handshake_timeout`.
    Timeout,
    /// The first bytes were not a TLS record (plain HTTP sent to a TLS port, garbage).
    NotTls,
}

pub const OUTCOMES: [Outcome; 12] = [
    Outcome::Ok,
    Outcome::Resumed,
    Outcome::NoCertificateForSni,
    Outcome::ProtocolVersion,
    Outcome::NoApplicationProtocol,
    Outcome::BadClientCertificate,
    Outcome::BadMessage,
    Outcome::AlertReceived,
    Outcome::HandshakeFailure,
    Outcome::ClientClosed,
    Outcome::Timeout,
    Outcome::NotTls,
];

impl Outcome {
    pub const fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Resumed => "resumed",
            Outcome::NoCertificateForSni => "no_certificate_for_sni",
            Outcome::ProtocolVersion => "protocol_version",
            Outcome::NoApplicationProtocol => "no_application_protocol",
            Outcome::BadClientCertificate => "bad_client_certificate",
            Outcome::BadMessage => "bad_message",
            Outcome::AlertReceived => "alert_received",
            Outcome::HandshakeFailure => "handshake_failure",
            Outcome::ClientClosed => "client_closed",
            Outcome::Timeout => "timeout",
            Outcome::NotTls => "not_tls",
        }
    }
}

/// The negotiated version; `Unknown` when the handshake failed before one was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Unknown,
    V12,
    V13,
}

pub const VERSIONS: [Version; 3] = [Version::Unknown, Version::V12, Version::V13];

impl Version {
    pub const fn as_str(self) -> &'static str {
        match self {
            Version::Unknown => "",
            Version::V12 => "1.2",
            Version::V13 => "1.3",
        }
    }

    pub fn of(v: Option<rustls::ProtocolVersion>) -> Version {
        match v {
            Some(rustls::ProtocolVersion::TLSv1_3) => Version::V13,
            Some(rustls::ProtocolVersion::TLSv1_2) => Version::V12,
            _ => Version::Unknown,
        }
    }
}

/// One listener's TLS counters.
#[derive(Debug, Default)]
pub struct ListenerTls {
    handshakes: [[AtomicU64; OUTCOMES.len()]; VERSIONS.len()],
    pub reloads_ok: AtomicU64,
    pub reloads_failed: AtomicU64,
}

impl ListenerTls {
    pub fn handshake(&self, version: Version, outcome: Outcome) {
        self.handshakes[version as usize][outcome as usize].fetch_add(1, Relaxed);
    }

    /// (version, result, count) for every pair seen at least once.
    pub fn handshakes(&self) -> Vec<(Version, Outcome, u64)> {
        let mut out = Vec::new();
        for v in VERSIONS {
            for o in OUTCOMES {
                let n = self.handshakes[v as usize][o as usize].load(Relaxed);
                if n > 0 {
                    out.push((v, o, n));
                }
            }
        }
        out
    }
}

static BY_LISTENER: LazyLock<Mutex<HashMap<Arc<str>, Arc<ListenerTls>>>> =
    LazyLock::new(Default::default);

/// The counters of the listener named `name` (the same ones across reloads).
pub fn for_listener(name: &Arc<str>) -> Arc<ListenerTls> {
    BY_LISTENER
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(name.clone())
        .or_default()
        .clone()
}
