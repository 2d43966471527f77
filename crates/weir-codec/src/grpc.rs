//! What gRPC puts in HTTP fields (github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md):
//! which messages are gRPC (`content-type`), a call's deadline (`grpc-timeout`) and a call's
//! status (`grpc-status`, `grpc-message`), read the same by the pipeline, the metrics and the
//! gRPC health check.

use std::time::Duration;

use http::header::{HeaderMap, HeaderName, CONTENT_TYPE};

// Names made once: a lookup by `&str` parses the name first (~500 instructions per call).
pub const GRPC_TIMEOUT: HeaderName = HeaderName::from_static("grpc-timeout");
pub const GRPC_STATUS: HeaderName = HeaderName::from_static("grpc-status");
pub const GRPC_MESSAGE: HeaderName = HeaderName::from_static("grpc-message");

/// Whether the request is a gRPC call (`application/grpc`, `application/grpc+proto`, ...;
/// gRPC-Web's `application/grpc-web*` is another protocol and is not).
pub fn is_grpc(headers: &HeaderMap) -> bool {
    let Some(ct) = headers.get(CONTENT_TYPE) else {
        return false;
    };
    let ct = ct.as_bytes();
    let Some(rest) = ct.strip_prefix(b"application/grpc") else {
        return false;
    };
    matches!(rest.first(), None | Some(b'+' | b';'))
}

/// The call's `grpc-timeout` (1 to 8 digits and a unit: H, M, S, m, u, n); `None` when
/// absent or malformed (the call then has no deadline of its own, as gRPC servers treat it).
pub fn timeout(headers: &HeaderMap) -> Option<Duration> {
    let v = headers.get(GRPC_TIMEOUT)?.as_bytes();
    let (digits, unit) = v.split_at(v.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 {
        return None;
    }
    let mut n: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u64::from(d - b'0');
    }
    Some(match unit {
        b"H" => Duration::from_secs(n.checked_mul(3600)?),
        b"M" => Duration::from_secs(n.checked_mul(60)?),
        b"S" => Duration::from_secs(n),
        b"m" => Duration::from_millis(n),
        b"u" => Duration::from_micros(n),
        b"n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// The status of a trailers-only gRPC answer (`grpc-status` in the head: a server that
/// failed the call before any message), if `headers` are one.
pub fn head_status(headers: &HeaderMap) -> Option<u16> {
    if !is_grpc(headers) {
        return None;
    }
    status_of(headers)?
}

/// The `grpc-status` field of `fields` if there is one, and its number if it is one.
/// Trailers and trailers-only heads are a few fields: looking at each costs less than
/// hashing the name for a lookup (by callgrind, ~60 instructions a call fewer).
pub fn status_of(fields: &HeaderMap) -> Option<Option<u16>> {
    let (_, v) = fields.iter().find(|(n, _)| **n == GRPC_STATUS)?;
    let b = v.as_bytes();
    if b.is_empty() || b.len() > 4 || !b.iter().all(u8::is_ascii_digit) {
        return Some(None);
    }
    Some(Some(b.iter().fold(0, |n, &d| n * 10 + u16::from(d - b'0'))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn with(name: &'static str, v: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(name, HeaderValue::from_static(v));
        h
    }

    #[test]
    fn statuses_are_read_as_numbers() {
        assert_eq!(status_of(&HeaderMap::new()), None);
        for (v, n) in [
            ("0", Some(0)),
            ("14", Some(14)),
            ("9999", Some(9999)),
            ("99999", None),
            ("", None),
            ("1a", None),
            ("+5", None),
        ] {
            assert_eq!(status_of(&with("grpc-status", v)), Some(n), "{v:?}");
        }
    }

    #[test]
    fn grpc_content_types() {
        for ct in [
            "application/grpc",
            "application/grpc+proto",
            "application/grpc;charset=utf-8",
        ] {
            assert!(is_grpc(&with("content-type", ct)), "{ct}");
        }
        for ct in [
            "application/grpc-web",
            "application/json",
            "application/grpcx",
        ] {
            assert!(!is_grpc(&with("content-type", ct)), "{ct}");
        }
        assert!(!is_grpc(&HeaderMap::new()));
    }

    #[test]
    fn grpc_timeouts() {
        let t = |v| timeout(&with("grpc-timeout", v));
        assert_eq!(t("100m"), Some(Duration::from_millis(100)));
        assert_eq!(t("2S"), Some(Duration::from_secs(2)));
        assert_eq!(t("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(t("5M"), Some(Duration::from_secs(300)));
        assert_eq!(t("99999999n"), Some(Duration::from_nanos(99_999_999)));
        assert_eq!(t("250u"), Some(Duration::from_micros(250)));
        for bad in ["", "m", "100", "123456789m", "10x", "-1S", "1.5S"] {
            assert_eq!(t(bad), None, "{bad}");
        }
    }
}
