//! `kind = "ip_allow"` / `"ip_deny"`: client addresses by CIDR (`10.0.0.0/8`, `2001:db8::/32`)
//! or alone (`192.0.2.7`), IPv4 and IPv6. The client is the resolved one (behind trusted
//! proxies, its real address), and an IPv4-mapped IPv6 address is taken as its IPv4.

use ipnet::IpNet;

use super::fields;
use crate::read::{Fields, Sink};

const KEYS: &[&str] = &["addresses"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpList {
    pub addresses: Vec<IpNet>,
}

pub(super) fn read(sink: &mut Sink<'_>, t: &Fields<'_, '_>) -> IpList {
    t.check_keys(sink, &fields::keys(KEYS));
    let mut list = IpList {
        addresses: Vec::new(),
    };
    let Some(v) = t.require(sink, "addresses", "this filter", "[\"10.0.0.0/8\"]") else {
        return list;
    };
    let items = fields::strings(sink, v);
    if items.is_empty() && crate::read::array_len(v) == Some(0) {
        sink.error(
            v.span(),
            "addresses is empty; list at least one address or network",
        );
    }
    for (s, span) in items {
        match parse(&s) {
            Ok(n) => list.addresses.push(n),
            Err(e) => sink.error(span, e),
        }
    }
    list
}

/// `a.b.c.d/n`, `x::/n`, or one address (a /32 or /128). Host bits set under the prefix are
/// an error: `10.0.0.1/8` is most likely a typo for either.
pub fn parse(s: &str) -> Result<IpNet, String> {
    if let Ok(ip) = s.parse::<std::net::IpAddr>() {
        return Ok(IpNet::from(ip));
    }
    let net: IpNet = s.parse().map_err(|_| {
        format!("invalid address {s:?}: expected an IP address or a network such as \"10.0.0.0/8\"")
    })?;
    if net.trunc() != net {
        return Err(format!(
            "invalid network {s:?}: it has host bits set; did you mean \"{}\"?",
            net.trunc()
        ));
    }
    Ok(net)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_and_single_addresses() {
        assert_eq!(parse("10.0.0.0/8").unwrap().to_string(), "10.0.0.0/8");
        assert_eq!(parse("192.0.2.7").unwrap().to_string(), "192.0.2.7/32");
        assert_eq!(parse("::1").unwrap().to_string(), "::1/128");
        assert!(parse("10.0.0.1/8").unwrap_err().contains("10.0.0.0/8"));
        assert!(parse("10.0.0.0/33").is_err());
        assert!(parse("nope").is_err());
    }
}
