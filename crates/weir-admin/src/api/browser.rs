//! What a web page can make the admin listener do. Any page a user opens can
//! send a form or a "simple" `fetch` (text/plain, no CORS preflight) to 127.0.0.1:9901,
//! and through DNS rebinding (its own name now resolving to 127.0.0.1) it can even be
//! same-origin with the admin listener. So, before anything else:
//!
//! - [`same_origin`]: an `Origin`, when sent, must be the listener's own. Browsers send it
//!   with every cross-origin `fetch` and every non-GET request, so a page elsewhere is
//!   refused (403); curl, `weir ctl` and Prometheus send none.
//! - [`host_is_loopback`]: a rebound page's requests carry its own name in `Host`;
//!   `Auth::check` refuses them unless the token guards the request.
//! - [`require_json`]: a body that is not empty must be labelled `application/json`, a type
//!   no page can send to another origin without a preflight, which weir never grants (415).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use http::{header, HeaderMap, StatusCode};

use super::problem::Problem;

/// A host and port as in `Host` or an origin; an IP is canonical (IPv4-mapped IPv6 as
/// IPv4), so one listener has one spelling.
#[derive(Debug, PartialEq, Eq)]
struct Authority {
    name: Name,
    port: u16,
}

#[derive(Debug, PartialEq, Eq)]
enum Name {
    Ip(IpAddr),
    /// Lower-cased.
    Dns(String),
}

/// `host`, `host:port`, `v4`, `v4:port`, `[v6]`, `[v6]:port`; the port defaults to 80, as
/// browsers leave it out of both `Host` and `Origin` then.
fn authority(s: &str) -> Option<Authority> {
    let (name, rest) = match s.strip_prefix('[') {
        Some(v6) => {
            let (ip, rest) = v6.split_once(']')?;
            (Name::Ip(ip.parse::<IpAddr>().ok()?.to_canonical()), rest)
        }
        None => {
            let (host, rest) = s.split_at(s.find(':').unwrap_or(s.len()));
            if host.is_empty() {
                return None;
            }
            match host.parse::<Ipv4Addr>() {
                Ok(ip) => (Name::Ip(ip.into()), rest),
                Err(_) => (Name::Dns(host.to_ascii_lowercase()), rest),
            }
        }
    };
    let port = match rest {
        "" => 80,
        r => r.strip_prefix(':')?.parse().ok()?,
    };
    Some(Authority { name, port })
}

/// The one `Host` header, parsed.
fn host(headers: &HeaderMap) -> Option<Authority> {
    let mut all = headers.get_all(header::HOST).iter();
    let h = all.next()?;
    if all.next().is_some() {
        return None;
    }
    authority(h.to_str().ok()?)
}

/// `localhost` or a loopback literal (127.0.0.0/8, `[::1]`, `[::ffff:127.x.y.z]`): names a
/// page elsewhere cannot make its own by rebinding DNS.
pub fn host_is_loopback(headers: &HeaderMap) -> bool {
    match host(headers).map(|a| a.name) {
        Some(Name::Ip(ip)) => ip.is_loopback(),
        Some(Name::Dns(n)) => n == "localhost",
        None => false,
    }
}

/// The `Host` header as sent, for messages.
pub fn host_text(headers: &HeaderMap) -> String {
    match headers.get(header::HOST).map(|h| h.to_str()) {
        Some(Ok(h)) => format!("{h:?}"),
        Some(Err(_)) => "not text".into(),
        None => "missing".into(),
    }
}

/// Refuses a request sent by a page of another origin. The listener's own origin is
/// `http://` and the `Host` the request was sent to, or the address it arrived at.
pub fn same_origin(headers: &HeaderMap, local: Option<SocketAddr>) -> Result<(), Problem> {
    let mut all = headers.get_all(header::ORIGIN).iter();
    let Some(origin) = all.next() else {
        return Ok(());
    };
    let text = origin.to_str().unwrap_or("");
    let given = text
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case("http://"))
        .and_then(|_| authority(&text[7..]));
    let own = |o: &Authority| {
        host(headers).as_ref() == Some(o)
            || local.is_some_and(|l| {
                o == &Authority {
                    name: Name::Ip(l.ip().to_canonical()),
                    port: l.port(),
                }
            })
    };
    match given {
        Some(o) if own(&o) && all.next().is_none() => Ok(()),
        _ => Err(Problem::new(
            StatusCode::FORBIDDEN,
            "cross-origin",
            "cross-origin request refused",
            format!(
                "Origin {text:?} is not this admin listener's own origin; \
                 it answers no page of another site"
            ),
        )),
    }
}

/// Refuses a body not labelled `application/json` (parameters such as `charset` aside);
/// asked only for a body that is not empty.
pub fn require_json(headers: &HeaderMap) -> Result<(), Problem> {
    let given = headers.get(header::CONTENT_TYPE);
    let essence = given
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(str::trim);
    if essence.is_some_and(|e| e.eq_ignore_ascii_case("application/json")) {
        return Ok(());
    }
    let what = match given.map(|v| v.to_str()) {
        Some(Ok(v)) => format!("Content-Type {v:?}"),
        Some(Err(_)) => "a Content-Type that is not text".into(),
        None => "no Content-Type".into(),
    };
    Err(Problem::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported-media-type",
        "the body must be JSON",
        format!("the request has {what}; send Content-Type: application/json"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Option<Authority> {
        authority(s)
    }

    #[test]
    fn authorities() {
        let ip = |s: &str, port| {
            Some(Authority {
                name: Name::Ip(s.parse().unwrap()),
                port,
            })
        };
        assert_eq!(a("127.0.0.1:9901"), ip("127.0.0.1", 9901));
        assert_eq!(a("127.0.0.1"), ip("127.0.0.1", 80));
        assert_eq!(a("[::1]:9"), ip("::1", 9));
        assert_eq!(a("[::ffff:7f00:1]:9"), ip("127.0.0.1", 9));
        assert_eq!(
            a("LocalHost:9"),
            Some(Authority {
                name: Name::Dns("localhost".into()),
                port: 9
            })
        );
        for bad in [
            "", ":80", "[::1", "[::1]x", "[nope]:1", "h:", "h:x", "h:1:2", "h:99999",
        ] {
            assert_eq!(a(bad), None, "{bad:?}");
        }
    }
}
