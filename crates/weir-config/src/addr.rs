//! Socket addresses with messages that say what is wrong, not just "invalid".
//!
//! Only `IP:PORT` literals here: an endpoint given by name (`HOST:PORT`) is read by
//! `dns_name.rs` and followed by an endpoint source, never resolved once at load time
//! (which would pin a DNS answer forever); a listener binds an address, not a name.

use std::net::{IpAddr, SocketAddr};

/// What an address is for; endpoints must be connectable, binds need not be.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    /// A local address to listen on; port 0 (any free port) is allowed.
    Bind,
    /// A backend to connect to.
    Endpoint,
}

/// Whether only this host can reach `ip`: 127.0.0.0/8, `::1`, and IPv4-mapped
/// `::ffff:127.x.y.z`, which Linux delivers over IPv4 loopback but
/// `Ipv6Addr::is_loopback` does not count.
pub fn is_loopback(ip: IpAddr) -> bool {
    ip.to_canonical().is_loopback()
}

pub(crate) fn parse(s: &str, usage: Use) -> Result<SocketAddr, String> {
    let addr = match s.parse::<SocketAddr>() {
        Ok(addr) => addr,
        Err(_) => return Err(explain(s)),
    };
    if usage == Use::Endpoint {
        if addr.port() == 0 {
            return Err(format!(
                "invalid endpoint address \"{s}\": port 0 cannot be connected to"
            ));
        }
        if addr.ip().is_unspecified() {
            return Err(format!(
                "invalid endpoint address \"{s}\": {} is the unspecified address; name the backend's IP, e.g. 127.0.0.1",
                addr.ip()
            ));
        }
    }
    Ok(addr)
}

/// Works out why `s` is not a socket address.
fn explain(s: &str) -> String {
    let example = "e.g. \"127.0.0.1:8080\" or \"[::1]:8080\"";
    match s.parse::<IpAddr>() {
        // "::1:9901" is a valid IPv6 address, so the port was taken as part of it.
        Ok(IpAddr::V6(_)) => {
            return format!(
                "invalid address \"{s}\": missing port; an IPv6 address with a port needs brackets, as in \"[::1]:8080\""
            )
        }
        Ok(IpAddr::V4(_)) => return format!("invalid address \"{s}\": missing port; write IP:PORT, {example}"),
        Err(_) => {}
    }
    let Some((host, port)) = s.rsplit_once(':') else {
        return format!("invalid address \"{s}\": expected IP:PORT, {example}");
    };
    if host.contains(':') && !host.starts_with('[') {
        return format!(
            "invalid address \"{s}\": an IPv6 address needs brackets, as in \"[{host}]:{port}\""
        );
    }
    if port.parse::<u16>().is_err() {
        return format!("invalid address \"{s}\": `{port}` is not a port number (0-65535)");
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.parse::<IpAddr>().is_err()
        && !bare.is_empty()
        && bare.chars().any(|c| c.is_ascii_alphabetic())
    {
        return format!(
            "invalid address \"{s}\": `{bare}` is a hostname; a bind address is IP:PORT, {example}"
        );
    }
    format!("invalid address \"{s}\": `{host}` is not an IP address; expected IP:PORT, {example}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explains_each_mistake() {
        assert!(parse("127.0.0.1:80", Use::Endpoint).is_ok());
        assert!(parse("[::1]:80", Use::Endpoint).is_ok());
        assert!(parse("0.0.0.0:0", Use::Bind).is_ok());
        for (s, why) in [
            ("127.0.0.1", "missing port"),
            ("localhost:80", "hostname"),
            ("db.internal:5432", "hostname"),
            ("::1:80", "brackets"),
            ("fe80::1%eth0:80", "brackets"),
            ("127.0.0.1:99999", "not a port"),
            ("1.2.3:80", "not an IP"),
            ("127.0.0.1:0", "port 0"),
            ("0.0.0.0:80", "unspecified"),
        ] {
            let err = parse(s, Use::Endpoint).unwrap_err();
            assert!(err.contains(why), "{s:?}: {err}");
        }
    }

    #[test]
    fn loopback_includes_ipv4_mapped() {
        for ip in [
            "127.0.0.1",
            "127.9.8.7",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:7f00:2",
        ] {
            assert!(is_loopback(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "10.0.0.1",
            "0.0.0.0",
            "::",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
        ] {
            assert!(!is_loopback(ip.parse().unwrap()), "{ip}");
        }
    }
}
