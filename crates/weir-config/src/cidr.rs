//! An address block (`10.0.0.0/8`, `::1/128`): what `trusted_proxies` lists. Its own file
//! because the model (model.rs) holds it and the reader (client_addr.rs) makes it.

use std::fmt;
use std::net::IpAddr;

/// An address block: `10.0.0.0/8`, `::1/128`, or one address (`127.0.0.1`, a /32 or /128).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cidr {
    /// With no bits set past `prefix` (checked when read).
    pub addr: IpAddr,
    pub prefix: u8,
}

impl Cidr {
    /// Whether `ip` is in the block. An IPv4-mapped IPv6 address (`::ffff:10.0.0.1`, a
    /// dual-stack socket's view of an IPv4 peer) counts as the IPv4 address it maps.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(ip) & mask == u32::from(net)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(ip) & mask == u128::from(net)
            }
            _ => false,
        }
    }

    /// Reads `10.0.0.0/8`, `2001:db8::/32` or a single address; the message says what is
    /// wrong (a prefix too long, bits set past it).
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let (ip, prefix) = match s.split_once('/') {
            Some((ip, p)) => (ip, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = ip.parse().map_err(|_| {
            format!("\"{s}\" is not an IP address or CIDR block (e.g. \"10.0.0.0/8\", \"::1\")")
        })?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => match p.parse::<u8>() {
                Ok(n) if n <= max && !p.starts_with('+') => n,
                _ => {
                    return Err(format!(
                        "\"{s}\": the prefix length must be a number from 0 to {max}"
                    ))
                }
            },
        };
        let cidr = Cidr { addr, prefix };
        let net = cidr.network();
        if net != addr {
            return Err(format!(
                "\"{s}\" has bits set past its /{prefix} prefix; write \"{net}/{prefix}\""
            ));
        }
        Ok(cidr)
    }

    /// `addr` with the bits past the prefix cleared.
    fn network(&self) -> IpAddr {
        match self.addr {
            IpAddr::V4(a) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                IpAddr::V4((u32::from(a) & mask).into())
            }
            IpAddr::V6(a) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                IpAddr::V6((u128::from(a) & mask).into())
            }
        }
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_contain_what_they_should() {
        let c = Cidr::parse("10.0.0.0/8").unwrap();
        assert!(c.contains("10.200.1.1".parse().unwrap()));
        assert!(c.contains("::ffff:10.0.0.1".parse().unwrap()));
        assert!(!c.contains("11.0.0.1".parse().unwrap()));
        assert!(!c.contains("::1".parse().unwrap()));
        let one = Cidr::parse("127.0.0.1").unwrap();
        assert_eq!(one.prefix, 32);
        assert!(one.contains("127.0.0.1".parse().unwrap()));
        assert!(!one.contains("127.0.0.2".parse().unwrap()));
        let all = Cidr::parse("0.0.0.0/0").unwrap();
        assert!(all.contains("1.2.3.4".parse().unwrap()));
        let v6 = Cidr::parse("2001:db8::/32").unwrap();
        assert!(v6.contains("2001:db8:1::5".parse().unwrap()));
        assert!(!v6.contains("2001:db9::5".parse().unwrap()));
        assert!(Cidr::parse("::/0")
            .unwrap()
            .contains("::1".parse().unwrap()));
    }

    #[test]
    fn bad_blocks_say_why() {
        for (s, want) in [
            ("10.0.0.1/8", "write \"10.0.0.0/8\""),
            ("10.0.0.0/33", "from 0 to 32"),
            ("::1/129", "from 0 to 128"),
            ("10.0.0.0/", "from 0 to 32"),
            ("10.0.0.0/+8", "from 0 to 32"),
            ("ten", "not an IP address"),
            ("10.0.0.0/8/8", "from 0 to 32"),
        ] {
            let e = Cidr::parse(s).unwrap_err();
            assert!(e.contains(want), "{s}: {e}");
        }
    }
}
