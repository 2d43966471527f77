//! A trusted proxy's chain of hops, carried from the forwarding field it came in to the other
//! one, so that a backend reading either sees the whole chain: a proxy that sends only
//! `Forwarded` (RFC 7239) would otherwise leave the backend an `X-Forwarded-For` naming that
//! proxy alone, and one that sends only `X-Forwarded-For` a `Forwarded` without the client.

use std::net::IpAddr;

use http::header::{self, HeaderMap, HeaderName};

/// Every line of a field, in order, joined with `, ` (a chain may come in several lines).
pub fn joined(h: &HeaderMap, name: &HeaderName) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for line in h.get_all(name) {
        if !out.is_empty() {
            out.extend_from_slice(b", ");
        }
        out.extend_from_slice(line.as_bytes());
    }
    (!out.is_empty()).then_some(out)
}

/// The addresses of the `for=` parameters of every `Forwarded` element, in order, as an
/// `X-Forwarded-For` list. Nodes that are not addresses (`unknown`, `_hidden`) have no
/// place in it and are left out.
pub fn xff_from_forwarded(h: &HeaderMap) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for line in h.get_all(header::FORWARDED) {
        let Ok(line) = line.to_str() else { continue };
        for element in line.split(',') {
            let node = element.split(';').find_map(|pair| {
                let (k, v) = pair.trim().split_once('=')?;
                k.trim().eq_ignore_ascii_case("for").then_some(v.trim())
            });
            let Some(ip) = node.and_then(crate::client_addr::parse_hop) else {
                continue;
            };
            if !out.is_empty() {
                out.extend_from_slice(b", ");
            }
            out.extend_from_slice(ip.to_string().as_bytes());
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The hops of every `X-Forwarded-For` line as `Forwarded` elements (`for=192.0.2.1`,
/// `for="[2001:db8::1]"`, RFC 7239 §6); entries that are not addresses are left out.
pub fn forwarded_from_xff(h: &HeaderMap, xff: &HeaderName) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for line in h.get_all(xff) {
        let Ok(line) = line.to_str() else { continue };
        for hop in line.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some(ip) = crate::client_addr::parse_hop(hop) else {
                continue;
            };
            if !out.is_empty() {
                out.extend_from_slice(b", ");
            }
            match ip {
                IpAddr::V4(v4) => out.extend_from_slice(format!("for={v4}").as_bytes()),
                IpAddr::V6(v6) => out.extend_from_slice(format!("for=\"[{v6}]\"").as_bytes()),
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn map(lines: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in lines {
            h.append(*n, HeaderValue::from_static(v));
        }
        h
    }

    fn text(v: Option<Vec<u8>>) -> Option<String> {
        v.map(|v| String::from_utf8(v).unwrap())
    }

    #[test]
    fn forwarded_nodes_become_an_xff_list() {
        let h = map(&[
            ("forwarded", "for=192.0.2.60;proto=http, for=unknown"),
            (
                "forwarded",
                "For=\"[2001:db8::5]:80\";by=203.0.113.43, host=a",
            ),
        ]);
        assert_eq!(
            text(xff_from_forwarded(&h)).as_deref(),
            Some("192.0.2.60, 2001:db8::5")
        );
        assert_eq!(
            xff_from_forwarded(&map(&[("forwarded", "for=_hidden")])),
            None
        );
    }

    #[test]
    fn xff_hops_become_forwarded_elements() {
        let xff = HeaderName::from_static("x-forwarded-for");
        let h = map(&[
            ("x-forwarded-for", "192.0.2.61, 2001:db8::6"),
            ("x-forwarded-for", "garbage, 10.0.0.1"),
        ]);
        assert_eq!(
            text(forwarded_from_xff(&h, &xff)).as_deref(),
            Some("for=192.0.2.61, for=\"[2001:db8::6]\", for=10.0.0.1")
        );
        assert_eq!(
            text(joined(&h, &xff)).as_deref(),
            Some("192.0.2.61, 2001:db8::6, garbage, 10.0.0.1")
        );
    }
}
