//! Header rewriting between client and upstream: hop-by-hop headers stay on
//! their hop (RFC 9110 §7.6.1), and the upstream learns who the client was.

use std::net::IpAddr;

use http::header::{self, HeaderMap, HeaderName, HeaderValue};

/// Headers that describe one connection, never forwarded.
static HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
];

static X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
static X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
static X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");

/// Whether `n` is hop-by-hop (or `Upgrade`, which weir does not pass yet).
/// A match on the (lower-case) name compiles to a length switch and one
/// compare, cheaper than comparing against each name in turn.
#[inline]
fn is_hop(n: &HeaderName) -> bool {
    matches!(
        n.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
    )
}

/// Removes hop-by-hop headers, including those the `Connection` header names.
/// Most messages carry none: one pass over the (few) names answers that,
/// cheaper than a hash lookup per hop-by-hop name.
pub fn strip_hop_by_hop(h: &mut HeaderMap) {
    if !h.keys().any(is_hop) {
        return;
    }
    if let Some(conn) = h.get(header::CONNECTION) {
        // Only pay for parsing when Connection names something unusual.
        let named: Vec<HeaderName> = conn
            .to_str()
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|t| !t.eq_ignore_ascii_case("close") && !t.eq_ignore_ascii_case("keep-alive"))
            .filter_map(|t| HeaderName::from_bytes(t.as_bytes()).ok())
            .collect();
        for n in named {
            h.remove(n);
        }
    }
    for n in &HOP_BY_HOP {
        h.remove(n);
    }
    // weir does not proxy upgrades yet (WebSocket comes later); an Upgrade
    // header without the connection-level handshake would confuse upstreams.
    h.remove(header::UPGRADE);
}

/// The client address as an `X-Forwarded-For` value, made once per connection.
pub fn client_ip_value(client: IpAddr) -> HeaderValue {
    let v4 = match client {
        IpAddr::V4(v4) => Some(v4),
        IpAddr::V6(v6) => v6.to_ipv4_mapped(),
    };
    if let Some(v4) = v4 {
        // By hand: `Display` for an address costs ~2k instructions, paid
        // once per client connection.
        let mut buf = [0u8; 15];
        let n = dotted_quad(v4.octets(), &mut buf);
        return HeaderValue::from_bytes(&buf[..n])
            .expect("digits and dots are a valid header value");
    }
    HeaderValue::from_str(&itoa_ip(client)).expect("an IP address is a valid header value")
}

/// `a.b.c.d` into `out`; its length.
fn dotted_quad(octets: [u8; 4], out: &mut [u8; 15]) -> usize {
    let mut n = 0;
    for (i, o) in octets.into_iter().enumerate() {
        if i > 0 {
            out[n] = b'.';
            n += 1;
        }
        if o >= 100 {
            out[n] = b'0' + o / 100;
            n += 1;
        }
        if o >= 10 {
            out[n] = b'0' + o / 10 % 10;
            n += 1;
        }
        out[n] = b'0' + o % 10;
        n += 1;
    }
    n
}

/// Adds `X-Forwarded-For` (appended to any the client sent), `-Proto` and `-Host`.
pub fn add_forwarded(h: &mut HeaderMap, client: &HeaderValue, host: Option<&HeaderValue>) {
    // One hash lookup for X-Forwarded-For, whether or not the client sent one.
    match h.entry(X_FORWARDED_FOR.clone()) {
        header::Entry::Vacant(v) => {
            v.insert(client.clone());
        }
        header::Entry::Occupied(mut o) => {
            let joined = o.get().to_str().ok().and_then(|prev| {
                let ip = client.to_str().ok()?;
                HeaderValue::from_str(&format!("{prev}, {ip}")).ok()
            });
            o.insert(joined.unwrap_or_else(|| client.clone()));
        }
    }
    h.insert(X_FORWARDED_PROTO.clone(), HeaderValue::from_static("http"));
    if let Some(host) = host {
        h.insert(X_FORWARDED_HOST.clone(), host.clone());
    }
}

fn itoa_ip(ip: IpAddr) -> String {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => v6.to_string(),
        },
        IpAddr::V4(v4) => v4.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_ip_values_match_display() {
        let ips = [
            "0.0.0.0",
            "9.10.99.100",
            "127.0.0.1",
            "255.255.255.255",
            "192.168.1.20",
            "::1",
            "::ffff:10.0.0.7",
            "2001:db8::42",
        ];
        for ip in ips {
            let ip: IpAddr = ip.parse().unwrap();
            assert_eq!(client_ip_value(ip).to_str().unwrap(), itoa_ip(ip), "{ip}");
        }
        for o in 0..=255u8 {
            let ip = IpAddr::from([o, o / 3, 255 - o, 7]);
            assert_eq!(client_ip_value(ip).to_str().unwrap(), ip.to_string());
        }
    }

    #[test]
    fn strips_connection_named_headers() {
        let mut h = HeaderMap::new();
        h.insert("connection", "keep-alive, x-secret".parse().unwrap());
        h.insert("x-secret", "1".parse().unwrap());
        h.insert("keep-alive", "timeout=5".parse().unwrap());
        h.insert("te", "trailers".parse().unwrap());
        h.insert("x-kept", "1".parse().unwrap());
        strip_hop_by_hop(&mut h);
        assert_eq!(h.len(), 1);
        assert!(h.contains_key("x-kept"));
    }

    #[test]
    fn appends_forwarded_for() {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", "10.0.0.1".parse().unwrap());
        let host = HeaderValue::from_static("a.com");
        let ip = client_ip_value("127.0.0.1".parse().unwrap());
        add_forwarded(&mut h, &ip, Some(&host));
        assert_eq!(h["x-forwarded-for"], "10.0.0.1, 127.0.0.1");
        assert_eq!(h["x-forwarded-proto"], "http");
        assert_eq!(h["x-forwarded-host"], "a.com");
    }
}
