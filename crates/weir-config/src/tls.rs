//! The TLS tables: `[listeners.NAME.tls]` (termination) and `[pools.NAME.tls]` (TLS to
//! endpoints), walked like the rest of a table (local rules only; files are read in
//! `tls_files`).

use std::path::PathBuf;

use toml::de::DeValue;

use crate::model::{CertificateFiles, ClientAuth, ListenerTls, PoolTls, TlsVersion};
use crate::read::{self, Fields, Sink, Span};
use crate::{defaults, host};

const LISTENER_TLS_KEYS: &[&str] = &[
    "certificates",
    "min_version",
    "client_auth",
    "client_ca",
    "client_identity_header",
    "client_cert_header",
    "handshake_timeout",
];
const CERTIFICATE_KEYS: &[&str] = &["cert", "key", "default"];
const POOL_TLS_KEYS: &[&str] = &["ca", "server_name", "cert", "key", "alpn", "min_version"];

const VERSIONS: &[(&str, TlsVersion)] = &[("1.2", TlsVersion::V12), ("1.3", TlsVersion::V13)];
const CLIENT_AUTH: &[(&str, ClientAuth)] = &[
    ("none", ClientAuth::None),
    ("optional", ClientAuth::Optional),
    ("required", ClientAuth::Required),
];

/// Where a certificate pair was written, for the file checks.
#[derive(Clone)]
pub(crate) struct PairAt {
    pub cert: Span,
    pub key: Span,
}

/// Where a listener's TLS settings were written.
#[derive(Clone, Default)]
pub(crate) struct ListenerTlsAt {
    /// The `tls` key.
    pub table: Option<Span>,
    pub pairs: Vec<PairAt>,
    pub client_ca: Option<Span>,
    /// Where to say that the listener has no certificate files (`certificates` absent: the
    /// table; empty: the array), unless `[certificates.NAME]` resources attach to it.
    pub no_files: Option<Span>,
    /// A file pair's `default = true`.
    pub default: Option<Span>,
}

/// Where a pool's TLS settings were written.
#[derive(Clone, Default)]
pub(crate) struct PoolTlsAt {
    pub ca: Option<Span>,
    pub cert: Option<Span>,
    pub key: Option<Span>,
    /// The `alpn` value, when it is a list.
    pub alpn: Option<Span>,
}

pub(crate) fn listener(
    sink: &mut Sink<'_>,
    _name: &str,
    t: &Fields<'_, '_>,
    at: &mut ListenerTlsAt,
) -> Option<ListenerTls> {
    t.check_keys(sink, LISTENER_TLS_KEYS);
    let mut tls = ListenerTls {
        certificates: Vec::new(),
        min_version: TlsVersion::V12,
        client_auth: ClientAuth::None,
        client_ca: None,
        client_identity_header: None,
        client_cert_header: None,
        handshake_timeout: defaults::HANDSHAKE_TIMEOUT,
    };
    // Without files, `[certificates.NAME]` resources must attach to it (`certificate.rs`).
    match t.get("certificates") {
        Some(v) => certificates(sink, v, &mut tls.certificates, at),
        None => at.no_files = Some(t.span.clone()),
    }
    if let Some(v) = t.choice(sink, "min_version", VERSIONS) {
        tls.min_version = v;
    }
    if let Some(v) = t.choice(sink, "client_auth", CLIENT_AUTH) {
        tls.client_auth = v;
    }
    if let Some((path, span)) = path(sink, t, "client_ca") {
        tls.client_ca = Some(path);
        at.client_ca = Some(span);
    }
    match (tls.client_auth, &tls.client_ca) {
        (ClientAuth::Optional | ClientAuth::Required, None) => {
            if let Some(span) = t.get("client_auth").map(|v| v.span()) {
                sink.error(
                    span,
                    "client_auth needs client_ca, the CA file that signs client certificates; add e.g. client_ca = \"certs/clients-ca.pem\"",
                );
            }
        }
        (ClientAuth::None, Some(_)) => {
            if let Some(span) = t.key_span("client_ca") {
                sink.warn(
                    span,
                    "client_ca has no effect while client_auth is \"none\" (set \"optional\" or \"required\")",
                );
            }
        }
        _ => {}
    }
    tls.client_identity_header = identity_header(sink, t, "client_identity_header", &tls);
    tls.client_cert_header = identity_header(sink, t, "client_cert_header", &tls);
    if let (Some(a), Some(b), Some(v)) = (
        &tls.client_identity_header,
        &tls.client_cert_header,
        t.get("client_cert_header"),
    ) {
        if a == b {
            sink.error(
                v.span(),
                "client_cert_header and client_identity_header name the same header; one would overwrite the other",
            );
        }
    }
    if let Some(d) = t.duration(sink, "handshake_timeout", true) {
        tls.handshake_timeout = d;
    }
    Some(tls)
}

/// A header name for what a client certificate says (`client_identity_header`,
/// `client_cert_header`), lower-cased.
fn identity_header(
    sink: &mut Sink<'_>,
    t: &Fields<'_, '_>,
    key: &str,
    tls: &ListenerTls,
) -> Option<String> {
    let v = t.get(key)?;
    let s = read::string(sink, v)?;
    if s.is_empty() || !s.bytes().all(is_token_byte) {
        sink.error(v.span(), format!("invalid header name {s:?}"));
        return None;
    }
    if tls.client_auth == ClientAuth::None {
        sink.warn(
            v.span(),
            format!("{key} is never set while client_auth is \"none\""),
        );
    }
    Some(s.to_ascii_lowercase())
}

fn certificates(
    sink: &mut Sink<'_>,
    v: &read::Val<'_>,
    out: &mut Vec<CertificateFiles>,
    listener_at: &mut ListenerTlsAt,
) {
    let Some(items) = read::array(sink, v) else {
        return;
    };
    if items.is_empty() {
        listener_at.no_files = Some(v.span());
    }
    let at = &mut listener_at.pairs;
    let mut default_at: Option<usize> = None;
    for item in items.iter() {
        let DeValue::Table(map) = item.get_ref() else {
            sink.error(
                item.span(),
                format!(
                    "expected a table like {{ cert = \"site.pem\", key = \"site.key\" }}, found {}",
                    read::a_type(item.get_ref())
                ),
            );
            continue;
        };
        let t = Fields {
            map,
            span: item.span(),
        };
        t.check_keys(sink, CERTIFICATE_KEYS);
        let cert = t.require(sink, "cert", "certificate", "\"certs/site.pem\"");
        let key = t.require(sink, "key", "certificate", "\"certs/site.key\"");
        let default = match t.get("default") {
            Some(d) => match d.get_ref().as_bool() {
                Some(b) => b,
                None => {
                    read::wrong_type(sink, d, "a boolean");
                    false
                }
            },
            None => false,
        };
        if default {
            let span = t.get("default").map(|d| d.span()).unwrap_or(item.span());
            if let Some(first) = default_at {
                let line = sink.line_of(first);
                sink.error(
                    span.clone(),
                    format!("only one certificate can be the default (another is, on line {line})"),
                );
            } else {
                default_at = Some(span.start);
                listener_at.default = Some(span.clone());
            }
        }
        let (Some(cert), Some(key)) = (cert, key) else {
            continue;
        };
        let (Some(c), Some(k)) = (nonempty(sink, cert), nonempty(sink, key)) else {
            continue;
        };
        out.push(CertificateFiles {
            cert: PathBuf::from(c),
            key: PathBuf::from(k),
            default,
        });
        at.push(PairAt {
            cert: cert.span(),
            key: key.span(),
        });
    }
}

pub(crate) fn pool(
    sink: &mut Sink<'_>,
    name: &str,
    t: &Fields<'_, '_>,
    at: &mut PoolTlsAt,
) -> PoolTls {
    t.check_keys(sink, POOL_TLS_KEYS);
    let mut tls = PoolTls {
        ca: None,
        server_name: None,
        cert: None,
        key: None,
        alpn: None,
        min_version: TlsVersion::V12,
    };
    if let Some((p, span)) = path(sink, t, "ca") {
        tls.ca = Some(p);
        at.ca = Some(span);
    }
    if let Some(v) = t.get("server_name") {
        if let Some(s) = read::string(sink, v) {
            match host::parse(s) {
                Ok(crate::host_match::HostMatch::Exact(h)) => tls.server_name = Some(h),
                Ok(crate::host_match::HostMatch::Suffix(_)) => sink.error(
                    v.span(),
                    "server_name is one name; a wildcard cannot be sent as SNI",
                ),
                Err(e) => sink.error(v.span(), e),
            }
        }
    }
    if let Some((p, span)) = path(sink, t, "cert") {
        tls.cert = Some(p);
        at.cert = Some(span);
    }
    if let Some((p, span)) = path(sink, t, "key") {
        tls.key = Some(p);
        at.key = Some(span);
    }
    match (&at.cert, &at.key) {
        (Some(span), None) => sink.error(
            span.clone(),
            format!("pools.{name}.tls has a client `cert` but no `key`; add both or neither"),
        ),
        (None, Some(span)) => sink.error(
            span.clone(),
            format!("pools.{name}.tls has a client `key` but no `cert`; add both or neither"),
        ),
        _ => {}
    }
    if let Some(v) = t.get("alpn") {
        if let Some(items) = read::array(sink, v) {
            let mut list = Vec::new();
            for item in items.iter() {
                match item.get_ref().as_str() {
                    Some(s) if !s.is_empty() && s.len() <= 255 => list.push(s.to_string()),
                    Some(_) => sink.error(item.span(), "an ALPN protocol name is 1 to 255 bytes"),
                    None => read::wrong_type(sink, item, "a string like \"http/1.1\""),
                }
            }
            tls.alpn = Some(list);
            at.alpn = Some(v.span());
        }
    }
    if let Some(v) = t.choice(sink, "min_version", VERSIONS) {
        tls.min_version = v;
    }
    tls
}

/// A route's `sni`: a server name or `*.` suffix, as `host` is read.
pub(crate) fn sni(sink: &mut Sink<'_>, v: &read::Val<'_>) -> Option<crate::host_match::HostMatch> {
    let s = read::string(sink, v)?;
    match host::parse(s) {
        Ok(h) => Some(h),
        Err(e) => {
            sink.error(v.span(), e.replace("host", "sni"));
            None
        }
    }
}

/// A non-empty path string and its span.
fn path(sink: &mut Sink<'_>, t: &Fields<'_, '_>, key: &str) -> Option<(PathBuf, Span)> {
    let v = t.get(key)?;
    let s = nonempty(sink, v)?;
    Some((PathBuf::from(s), v.span()))
}

fn nonempty<'a>(sink: &mut Sink<'_>, v: &'a read::Val<'_>) -> Option<&'a str> {
    let s = read::string(sink, v)?;
    if s.is_empty() {
        sink.error(v.span(), "expected a file path, found an empty string");
        return None;
    }
    Some(s)
}

/// RFC 9110 `tchar`.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}
