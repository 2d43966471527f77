//! The client's address behind trusted proxies (a listener's `trusted_proxies`): from a
//! trusted peer, `X-Forwarded-For` (else `Forwarded`'s `for=`) is read from the right, each
//! hop that is itself a trusted proxy skipped; the first one that is not is the client.
//! Only requests from a trusted peer come here (`ConnInfo::trusted`), so a listener without
//! the list, or a peer outside it, pays nothing.

use std::net::{IpAddr, SocketAddr};

use http::header::{self, HeaderMap, HeaderName};
use weir_config::Cidr;

static X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// Whether `ip` is one of `trusted`.
pub fn trusts(trusted: &[Cidr], ip: IpAddr) -> bool {
    trusted.iter().any(|c| c.contains(ip))
}

/// The client of a request that `peer` (trusted) forwarded. An address read from a header
/// has port 0 (no port is known; the access log then shows the address alone). When every
/// hop is trusted, the leftmost stands; a hop that is not an address (`unknown`, an
/// obfuscated name, garbage) ends the walk, and the trusted hop to its right stands.
pub fn resolve(trusted: &[Cidr], peer: SocketAddr, h: &HeaderMap) -> SocketAddr {
    let mut walk = Walk {
        trusted,
        last: None,
    };
    let found = if h.contains_key(&X_FORWARDED_FOR) {
        walk.xff(h)
    } else {
        walk.forwarded(h)
    };
    let ip = match found {
        Some(ip) => Some(ip),
        None => walk.last,
    };
    ip.map_or(peer, |ip| SocketAddr::new(ip.to_canonical(), 0))
}

struct Walk<'a> {
    trusted: &'a [Cidr],
    /// The leftmost trusted hop seen so far.
    last: Option<IpAddr>,
}

impl Walk<'_> {
    /// One hop, right to left: `Some(Some(ip))` the client, `Some(None)` stop (not an
    /// address), `None` go on (a trusted proxy).
    fn hop(&mut self, s: &str) -> Option<Option<IpAddr>> {
        match parse_hop(s) {
            None => Some(None),
            Some(ip) if !trusts(self.trusted, ip) => Some(Some(ip)),
            Some(ip) => {
                self.last = Some(ip);
                None
            }
        }
    }

    fn xff(&mut self, h: &HeaderMap) -> Option<IpAddr> {
        for line in h.get_all(&X_FORWARDED_FOR).iter().rev() {
            let Ok(line) = line.to_str() else {
                return None;
            };
            for hop in line.rsplit(',').map(str::trim).filter(|s| !s.is_empty()) {
                if let Some(r) = self.hop(hop) {
                    return r;
                }
            }
        }
        None
    }

    fn forwarded(&mut self, h: &HeaderMap) -> Option<IpAddr> {
        for line in h.get_all(header::FORWARDED).iter().rev() {
            let Ok(line) = line.to_str() else {
                return None;
            };
            for element in line.rsplit(',') {
                let for_ = element.split(';').find_map(|pair| {
                    let (k, v) = pair.trim().split_once('=')?;
                    k.eq_ignore_ascii_case("for").then_some(v)
                });
                // An element without `for=` says nothing about who sent it.
                let Some(v) = for_ else { continue };
                if let Some(r) = self.hop(v) {
                    return r;
                }
            }
        }
        None
    }
}

/// `1.2.3.4`, `1.2.3.4:80`, `2001:db8::1`, `[2001:db8::1]:80`, quoted or not.
pub fn parse_hop(s: &str) -> Option<IpAddr> {
    let s = s.trim().trim_matches('"');
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Ok(sa) = s.parse::<SocketAddr>() {
        return Some(sa.ip());
    }
    let inner = s.strip_prefix('[')?;
    inner[..inner.find(']')?].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nets(list: &[&str]) -> Vec<Cidr> {
        list.iter().map(|s| Cidr::parse(s).unwrap()).collect()
    }

    fn resolve_with(trusted: &[&str], headers: &[(&str, &str)]) -> String {
        let mut h = HeaderMap::new();
        for (k, v) in headers {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        let peer = "10.0.0.1:5555".parse().unwrap();
        let a = resolve(&nets(trusted), peer, &h);
        match a.port() {
            0 => a.ip().to_string(),
            _ => a.to_string(),
        }
    }

    #[test]
    fn walks_from_the_right_past_trusted_hops() {
        let t = ["10.0.0.0/8", "::1/128"];
        let xff = |v| resolve_with(&t, &[("x-forwarded-for", v)]);
        assert_eq!(xff("203.0.113.9"), "203.0.113.9");
        // The client's own claim on the left is not believed past an untrusted hop.
        assert_eq!(xff("1.1.1.1, 203.0.113.9, 10.2.3.4"), "203.0.113.9");
        assert_eq!(xff("203.0.113.9, ::1, 10.9.9.9"), "203.0.113.9");
        // Every hop trusted: the leftmost.
        assert_eq!(xff("10.7.7.7, 10.8.8.8"), "10.7.7.7");
        // Garbage ends the walk at the trusted hop to its right.
        assert_eq!(xff("203.0.113.9, unknown, 10.8.8.8"), "10.8.8.8");
        assert_eq!(xff("unknown"), "10.0.0.1:5555");
        assert_eq!(xff("[2001:db8::7]:443"), "2001:db8::7");
        assert_eq!(xff("198.51.100.1:8080"), "198.51.100.1");
        // Two lines are one list, in order.
        let two = resolve_with(
            &t,
            &[
                ("x-forwarded-for", "198.51.100.1"),
                ("x-forwarded-for", "10.1.1.1"),
            ],
        );
        assert_eq!(two, "198.51.100.1");
        // No header: the peer.
        assert_eq!(resolve_with(&t, &[]), "10.0.0.1:5555");
    }

    #[test]
    fn reads_forwarded_when_there_is_no_x_forwarded_for() {
        let t = ["10.0.0.0/8"];
        let fwd = |v| resolve_with(&t, &[("forwarded", v)]);
        assert_eq!(
            fwd("for=192.0.2.60;proto=http;by=203.0.113.43"),
            "192.0.2.60"
        );
        assert_eq!(fwd("for=\"[2001:db8:cafe::17]:4711\""), "2001:db8:cafe::17");
        assert_eq!(fwd("for=192.0.2.43, for=10.0.0.9"), "192.0.2.43");
        assert_eq!(fwd("For=_hidden, for=10.0.0.9"), "10.0.0.9");
        // X-Forwarded-For wins when both are there.
        let both = resolve_with(
            &t,
            &[
                ("x-forwarded-for", "198.51.100.2"),
                ("forwarded", "for=192.0.2.1"),
            ],
        );
        assert_eq!(both, "198.51.100.2");
    }
}
