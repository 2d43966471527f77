//! Header rewriting between client and upstream: hop-by-hop headers stay on
//! their hop (RFC 9110 §7.6.1), and the upstream learns who the client was.

use std::net::IpAddr;

use bytes::BytesMut;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};

use crate::proxy_chain;
use weir_codec::added::Added;
use weir_h1::fields::trim;

/// Headers that describe one connection, never forwarded, and `Upgrade`,
/// which weir does not pass yet (WebSocket comes later; an Upgrade header
/// without the connection-level handshake would confuse upstreams). The
/// order is that of the bits `field_bit` returns.
static HOP_BY_HOP: [HeaderName; 9] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

static X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
static X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
static X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");

/// The bit of `n` in `HOP_BY_HOP` (bits 0-8), or of a field [`for_upstream`] replaces
/// (`EXPECT` and the forwarding fields), or 0. A match on the (lower-case) name compiles to a
/// length switch and one compare.
#[inline]
fn field_bit(n: &HeaderName) -> u16 {
    match n.as_str() {
        "connection" => 1,
        "keep-alive" => 1 << 1,
        "proxy-connection" => 1 << 2,
        "proxy-authenticate" => 1 << 3,
        "proxy-authorization" => 1 << 4,
        "te" => 1 << 5,
        "trailer" => 1 << 6,
        "transfer-encoding" => 1 << 7,
        "upgrade" => 1 << 8,
        "expect" => EXPECT,
        "x-forwarded-for" => FORWARDED_FOR,
        "forwarded" => FORWARDED,
        "x-forwarded-proto" => FORWARDED_PROTO,
        "x-forwarded-host" => FORWARDED_HOST,
        _ => 0,
    }
}

const HOP: u16 = (1 << 9) - 1;
const EXPECT: u16 = 1 << 9;
const FORWARDED_FOR: u16 = 1 << 10;
const FORWARDED: u16 = 1 << 11;
const FORWARDED_PROTO: u16 = 1 << 12;
const FORWARDED_HOST: u16 = 1 << 13;
const FORWARDING: u16 = FORWARDED_FOR | FORWARDED | FORWARDED_PROTO | FORWARDED_HOST;

/// Removes hop-by-hop headers, including those the `Connection` header names.
/// One pass over the (few) names finds which are present; only those are
/// removed (a hash lookup each). Most requests carry none; most responses
/// only `Connection: keep-alive`.
pub fn strip_hop_by_hop(h: &mut HeaderMap) {
    let present = h.keys().fold(0, |bits, n| bits | field_bit(n));
    strip(h, present & HOP);
}

fn strip(h: &mut HeaderMap, present: u16) {
    if present == 0 {
        return;
    }
    if present & 1 != 0 {
        for n in named_by_connection(h) {
            h.remove(n);
        }
    }
    for (i, n) in HOP_BY_HOP.iter().enumerate() {
        if present & (1 << i) != 0 {
            h.remove(n);
        }
    }
}

/// A request's fields made ready for the upstream hop, from one pass over their names:
/// hop-by-hop fields and `Expect` (weir answers it itself) removed, and the client told
/// about (`f`, and `host` for `X-Forwarded-Host`). Behind a trusted proxy whose own
/// forwarding fields came along, ours are merged into them in the map (`add_forwarded`);
/// otherwise any the client sent are removed and ours come back [`Added`], for the upstream
/// codec to write after the map's fields.
pub fn for_upstream<'c>(
    h: &mut HeaderMap,
    f: &Forwarding<'c>,
    host: Option<&HeaderValue>,
    trusted: bool,
) -> Added<'c> {
    let present = h.keys().fold(0, |bits, n| bits | field_bit(n));
    strip(h, present & HOP);
    if present & EXPECT != 0 {
        h.remove(header::EXPECT);
    }
    let theirs = present & FORWARDING;
    if trusted && theirs != 0 {
        add_forwarded(h, f, host, true);
        return Added::NONE;
    }
    // Replaced, so that a client cannot put words in a proxy's mouth (as `add_forwarded`
    // without `append`). A client's X-Forwarded-Host stays when weir has no host to say.
    if theirs != 0 {
        if theirs & FORWARDED_FOR != 0 {
            h.remove(&X_FORWARDED_FOR);
        }
        if theirs & FORWARDED != 0 {
            h.remove(header::FORWARDED);
        }
        if theirs & FORWARDED_PROTO != 0 {
            h.remove(&X_FORWARDED_PROTO);
        }
        if theirs & FORWARDED_HOST != 0 && host.is_some() {
            h.remove(&X_FORWARDED_HOST);
        }
    }
    Added {
        forwarded_for: Some(f.client),
        forwarded: Some(f.forwarded),
        proto: Some(f.proto),
        host: host.cloned(),
    }
}

/// The headers the `Connection` lines name besides `close` and `keep-alive`
/// (no allocation when there are none, the usual case).
fn named_by_connection(h: &HeaderMap) -> Vec<HeaderName> {
    let mut named = Vec::new();
    for line in h.get_all(header::CONNECTION) {
        for token in line.as_bytes().split(|&b| b == b',').map(trim) {
            if token.is_empty()
                || token.eq_ignore_ascii_case(b"close")
                || token.eq_ignore_ascii_case(b"keep-alive")
            {
                continue;
            }
            if let Ok(n) = HeaderName::from_bytes(token) {
                named.push(n);
            }
        }
    }
    named
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

/// This hop's element of `Forwarded` for a client (`client_ip_value`) and `proto` (`http`
/// or `https`): `for=192.0.2.1;proto=http`, an IPv6 address bracketed and quoted
/// (`for="[2001:db8::1]"`, RFC 7239). Made once per connection (`ConnInfo::new`):
/// built per request it cost an allocation and ~300 instructions (callgrind).
pub fn forwarded_value(client: &HeaderValue, proto: &str) -> HeaderValue {
    client_values(client, proto).1
}

/// A connection's `X-Forwarded-For` value (`client`) and its `Forwarded` element
/// (`forwarded_value`), the first a slice of the second: one allocation and one count for
/// both, which every connection keeps (two cost it 40 bytes more).
pub fn client_values(client: &HeaderValue, proto: &str) -> (HeaderValue, HeaderValue) {
    let ip = client.as_bytes();
    let (open, close): (&[u8], &[u8]) = match ip.contains(&b':') {
        true => (b"for=\"[", b"]\""),
        false => (b"for=", b""),
    };
    // Sized exactly: a vector with room to spare becomes a `Bytes` with a second allocation.
    let len = open.len() + ip.len() + close.len() + ";proto=".len() + proto.len();
    let mut v = Vec::with_capacity(len);
    v.extend_from_slice(open);
    v.extend_from_slice(ip);
    v.extend_from_slice(close);
    v.extend_from_slice(b";proto=");
    v.extend_from_slice(proto.as_bytes());
    let all = bytes::Bytes::from(v);
    let addr = all.slice(open.len()..open.len() + ip.len());
    let valid = "an address and a scheme make a valid header value";
    (
        HeaderValue::from_maybe_shared(addr).expect(valid),
        HeaderValue::from_maybe_shared(all).expect(valid),
    )
}

/// What a connection tells the upstream about its client: `X-Forwarded-For` (`client`,
/// from `client_ip_value`), this hop's `Forwarded` element (`forwarded_value`) and the
/// scheme (`http` or `https`) for `X-Forwarded-Proto`.
pub struct Forwarding<'a> {
    pub client: &'a HeaderValue,
    pub forwarded: &'a HeaderValue,
    pub proto: &'static str,
}

/// Adds `X-Forwarded-For` and `Forwarded`, `X-Forwarded-Proto` and `-Host`. With `append`
/// (the peer is a trusted proxy) the first two are appended to what the peer sent (every
/// line of it), and a chain the peer sent in only one of them is carried into the other
/// (`proxy_chain.rs`); otherwise they replace it, so a client cannot put words in a proxy's
/// mouth.
pub fn add_forwarded(
    h: &mut HeaderMap,
    f: &Forwarding<'_>,
    host: Option<&HeaderValue>,
    append: bool,
) {
    let client = f.client;
    // A chain in one field only, carried into the other: read before either is changed.
    let (chain_xff, chain_fwd) = match append {
        true if !h.contains_key(&X_FORWARDED_FOR) => (proxy_chain::xff_from_forwarded(h), None),
        true if !h.contains_key(header::FORWARDED) => {
            (None, proxy_chain::forwarded_from_xff(h, &X_FORWARDED_FOR))
        }
        _ => (None, None),
    };
    // One hash lookup for X-Forwarded-For, whether or not the client sent one.
    match h.entry(X_FORWARDED_FOR.clone()) {
        header::Entry::Vacant(v) => match chain_xff {
            Some(mut prev) => {
                prev.extend_from_slice(b", ");
                prev.extend_from_slice(client.as_bytes());
                let joined = HeaderValue::from_maybe_shared(bytes::Bytes::from(prev));
                v.insert(joined.unwrap_or_else(|_| client.clone()));
            }
            None => {
                v.insert(client.clone());
            }
        },
        header::Entry::Occupied(mut o) if append => {
            // Every line, in order: a chain may come in several.
            let mut prev = Vec::new();
            for line in o.iter() {
                prev.extend_from_slice(line.as_bytes());
                prev.extend_from_slice(b", ");
            }
            prev.extend_from_slice(client.as_bytes());
            let joined = HeaderValue::from_maybe_shared(bytes::Bytes::from(prev));
            o.insert(joined.unwrap_or_else(|_| client.clone()));
        }
        header::Entry::Occupied(mut o) => {
            o.insert(client.clone());
        }
    }
    let prev = match append {
        true => proxy_chain::joined(h, &header::FORWARDED).or(chain_fwd),
        false => None,
    };
    let forwarded = match prev {
        Some(prev) => {
            let mut v = BytesMut::with_capacity(prev.len() + 2 + f.forwarded.len());
            v.extend_from_slice(&prev);
            v.extend_from_slice(b", ");
            v.extend_from_slice(f.forwarded.as_bytes());
            HeaderValue::from_maybe_shared(v.freeze()).ok()
        }
        None => Some(f.forwarded.clone()),
    };
    if let Some(v) = forwarded {
        h.insert(header::FORWARDED, v);
    }
    h.insert(X_FORWARDED_PROTO.clone(), HeaderValue::from_static(f.proto));
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
        h.append("connection", "keep-alive, x-secret".parse().unwrap());
        // Every Connection line counts, not only the first.
        h.append("connection", "X-Other , close".parse().unwrap());
        h.insert("x-secret", "1".parse().unwrap());
        h.insert("x-other", "1".parse().unwrap());
        h.insert("keep-alive", "timeout=5".parse().unwrap());
        h.insert("te", "trailers".parse().unwrap());
        h.insert("upgrade", "websocket".parse().unwrap());
        h.insert("x-kept", "1".parse().unwrap());
        strip_hop_by_hop(&mut h);
        assert_eq!(h.len(), 1, "{h:?}");
        assert!(h.contains_key("x-kept"));
    }

    #[test]
    fn every_hop_by_hop_name_has_its_bit() {
        for (i, n) in HOP_BY_HOP.iter().enumerate() {
            assert_eq!(field_bit(n), 1 << i, "{n}");
        }
        assert_eq!(field_bit(&header::HOST), 0);
        assert_eq!(field_bit(&header::EXPECT), EXPECT);
        assert_eq!(field_bit(&header::FORWARDED), FORWARDED);
        assert_eq!(field_bit(&X_FORWARDED_FOR), FORWARDED_FOR);
        assert_eq!(field_bit(&X_FORWARDED_PROTO), FORWARDED_PROTO);
        assert_eq!(field_bit(&X_FORWARDED_HOST), FORWARDED_HOST);
    }

    /// A connection's forwarding fields, leaked for the test's length.
    fn fwd(ip: &HeaderValue, proto: &'static str) -> Forwarding<'static> {
        Forwarding {
            client: Box::leak(Box::new(ip.clone())),
            forwarded: Box::leak(Box::new(forwarded_value(ip, proto))),
            proto,
        }
    }

    #[test]
    fn appends_forwarded_for() {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", "10.0.0.1".parse().unwrap());
        let host = HeaderValue::from_static("a.com");
        let ip = client_ip_value("127.0.0.1".parse().unwrap());
        h.insert("forwarded", "for=10.0.0.1".parse().unwrap());
        add_forwarded(&mut h, &fwd(&ip, "https"), Some(&host), true);
        assert_eq!(h["x-forwarded-for"], "10.0.0.1, 127.0.0.1");
        assert_eq!(h["forwarded"], "for=10.0.0.1, for=127.0.0.1;proto=https");
        assert_eq!(h["x-forwarded-proto"], "https");
        assert_eq!(h["x-forwarded-host"], "a.com");
        let mut h = HeaderMap::new();
        let v6 = client_ip_value("::1".parse().unwrap());
        add_forwarded(&mut h, &fwd(&v6, "http"), None, false);
        assert_eq!(h["forwarded"], "for=\"[::1]\";proto=http");
    }

    /// A connection's two values: the address, and its `Forwarded` element whose bytes the
    /// address is a slice of (one allocation for both), for IPv4 and bracketed IPv6.
    #[test]
    fn client_values_share_their_bytes() {
        for (ip, client, forwarded) in [
            ("192.0.2.7", "192.0.2.7", "for=192.0.2.7;proto=https"),
            (
                "2001:db8::5",
                "2001:db8::5",
                "for=\"[2001:db8::5]\";proto=https",
            ),
        ] {
            let (c, f) = client_values(&client_ip_value(ip.parse().unwrap()), "https");
            assert_eq!(c, client);
            assert_eq!(f, forwarded);
            let whole = f.as_bytes().as_ptr_range();
            assert!(whole.contains(&c.as_bytes().as_ptr()), "{ip}: not a slice");
        }
    }

    #[test]
    fn replaces_forwarded_for_from_an_untrusted_peer() {
        let mut h = HeaderMap::new();
        h.append("x-forwarded-for", "6.6.6.6".parse().unwrap());
        h.append("x-forwarded-for", "7.7.7.7".parse().unwrap());
        h.insert("forwarded", "for=6.6.6.6".parse().unwrap());
        let ip = client_ip_value("127.0.0.1".parse().unwrap());
        add_forwarded(&mut h, &fwd(&ip, "http"), None, false);
        assert_eq!(h.get_all("x-forwarded-for").iter().count(), 1);
        assert_eq!(h["x-forwarded-for"], "127.0.0.1");
        assert_eq!(h["forwarded"], "for=127.0.0.1;proto=http");
        // Trusted: every line kept, in order.
        let mut h = HeaderMap::new();
        h.append("x-forwarded-for", "1.1.1.1".parse().unwrap());
        h.append("x-forwarded-for", "10.0.0.2".parse().unwrap());
        add_forwarded(&mut h, &fwd(&ip, "http"), None, true);
        assert_eq!(h["x-forwarded-for"], "1.1.1.1, 10.0.0.2, 127.0.0.1");
    }

    #[test]
    fn for_upstream_keeps_its_fields_beside_the_map_unless_a_trusted_chain_came() {
        let ip = client_ip_value("127.0.0.1".parse().unwrap());
        let host = HeaderValue::from_static("a.com");
        let added = |a: &Added| -> Vec<(String, String)> {
            a.iter()
                .map(|(n, v)| (n.to_string(), String::from_utf8(v.to_vec()).unwrap()))
                .collect()
        };
        let ours = vec![
            ("x-forwarded-for".to_string(), "127.0.0.1".to_string()),
            (
                "forwarded".to_string(),
                "for=127.0.0.1;proto=http".to_string(),
            ),
            ("x-forwarded-proto".to_string(), "http".to_string()),
            ("x-forwarded-host".to_string(), "a.com".to_string()),
        ];
        // A client's own are removed, whoever it is, when it is not trusted.
        let mut h = HeaderMap::new();
        h.append("x-forwarded-for", "6.6.6.6".parse().unwrap());
        h.append("x-forwarded-for", "7.7.7.7".parse().unwrap());
        h.insert("forwarded", "for=6.6.6.6".parse().unwrap());
        h.insert("x-forwarded-proto", "https".parse().unwrap());
        h.insert("x-forwarded-host", "evil.com".parse().unwrap());
        h.insert("expect", "100-continue".parse().unwrap());
        h.insert("connection", "close".parse().unwrap());
        h.insert("x-kept", "1".parse().unwrap());
        let a = for_upstream(&mut h, &fwd(&ip, "http"), Some(&host), false);
        assert_eq!(h.len(), 1, "{h:?}");
        assert!(h.contains_key("x-kept"));
        assert_eq!(added(&a), ours);
        assert_eq!(a.get("x-forwarded-for"), Some(&b"127.0.0.1"[..]));
        assert_eq!(a.get("x-kept"), None);
        // Trusted, with none of its own: the same.
        let mut h = HeaderMap::new();
        let a = for_upstream(&mut h, &fwd(&ip, "http"), Some(&host), true);
        assert!(h.is_empty());
        assert_eq!(added(&a), ours);
        // Trusted, with its chain: ours merged into the map.
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", "10.0.0.1".parse().unwrap());
        let a = for_upstream(&mut h, &fwd(&ip, "http"), Some(&host), true);
        assert!(added(&a).is_empty());
        assert_eq!(h["x-forwarded-for"], "10.0.0.1, 127.0.0.1");
        // (Its X-Forwarded-For chain carried into Forwarded too: `proxy_chain.rs`.)
        assert_eq!(h["forwarded"], "for=10.0.0.1, for=127.0.0.1;proto=http");
        assert_eq!(h["x-forwarded-host"], "a.com");
        // No host to say: a client's X-Forwarded-Host stays (as `add_forwarded` leaves it).
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-host", "b.com".parse().unwrap());
        let a = for_upstream(&mut h, &fwd(&ip, "http"), None, false);
        assert_eq!(h["x-forwarded-host"], "b.com");
        assert_eq!(a.get("x-forwarded-host"), None);
    }
}
