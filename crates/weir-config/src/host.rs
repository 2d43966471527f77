//! Route host patterns: `lb.foo.com` or `*.foo.com`, stored lower-cased.
//!
//! Matching is on the name only; the router strips the port from the request's
//! Host header, so a port in the pattern could never match and is an error.
//!
//! Also the Host header that http health checks send ([`header_value`]).

use crate::host_match::HostMatch;

pub(crate) fn parse(raw: &str) -> Result<HostMatch, String> {
    let s = raw.to_ascii_lowercase();
    if s.is_empty() {
        return Err("host is empty; omit `host` to match any host".into());
    }
    if s == "*" {
        return Err("host = \"*\" is not needed; omit `host` to match any host".into());
    }
    if s.starts_with('[') {
        return Err(format!(
            "invalid host \"{raw}\": IPv6 literal hosts are not supported in routes"
        ));
    }
    if let Some((name, _)) = s.split_once(':') {
        return Err(format!(
            "invalid host \"{raw}\": a host must not include a port; write \"{name}\" (routes match the name only)"
        ));
    }
    let (wildcard, name) = match s.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, s.as_str()),
    };
    if name.contains('*') {
        return Err(format!(
            "invalid host \"{raw}\": `*` is only allowed as a whole first label, as in \"*.example.com\""
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(format!(
            "invalid host \"{raw}\": `{bad}` is not allowed in a host name"
        ));
    }
    if name.split('.').any(str::is_empty) {
        return Err(format!(
            "invalid host \"{raw}\": empty label (leading, trailing or doubled `.`)"
        ));
    }
    Ok(if wildcard {
        HostMatch::Suffix(format!(".{name}"))
    } else {
        HostMatch::Exact(name.to_string())
    })
}

/// A value weir can send as a Host header: a host name, an IPv4 address or a
/// bracketed IPv6 address, optionally followed by `:PORT`. Kept as written.
/// `what` names the key in messages ("health host").
pub(crate) fn header_value(raw: &str, what: &str) -> Result<(), String> {
    let bad = |why: String| Err(format!("invalid {what} \"{raw}\": {why}"));
    if raw.is_empty() {
        return Err(format!("{what} is empty"));
    }
    if let Some(c) = raw
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || matches!(c, '/' | '\\' | '?' | '#' | '@'))
    {
        return bad(format!(
            "{c:?} is not allowed in a Host header (write a host name or IP, optionally with :PORT)"
        ));
    }
    let (name, port) = if let Some(rest) = raw.strip_prefix('[') {
        let Some((ip, after)) = rest.split_once(']') else {
            return bad("missing `]` after the IPv6 address".into());
        };
        if ip.parse::<std::net::Ipv6Addr>().is_err() {
            return bad(format!("`{ip}` is not an IPv6 address"));
        }
        match after {
            "" => (None, None),
            _ => match after.strip_prefix(':') {
                Some(p) => (None, Some(p)),
                None => return bad("only `:PORT` may follow `]`".into()),
            },
        }
    } else {
        match raw.split_once(':') {
            Some((n, p)) if !p.contains(':') => (Some(n), Some(p)),
            Some(_) => {
                return bad("an IPv6 address must be in brackets, as in \"[::1]:8080\"".into())
            }
            None => (Some(raw), None),
        }
    };
    if let Some(name) = name {
        if name.is_empty() {
            return bad("the host name before `:` is missing".into());
        }
        if let Some(c) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        {
            return bad(format!("`{c}` is not allowed in a host name"));
        }
        if name.split('.').any(str::is_empty) {
            return bad("empty label (leading, trailing or doubled `.`)".into());
        }
    }
    if let Some(p) = port {
        let ok = !p.is_empty()
            && p.bytes().all(|b| b.is_ascii_digit())
            && p.parse::<u16>().is_ok_and(|n| n > 0);
        if !ok {
            return bad(format!("port `{p}` is not a number from 1 to 65535"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_and_rejects() {
        assert_eq!(
            parse("LB.Foo.com"),
            Ok(HostMatch::Exact("lb.foo.com".into()))
        );
        assert_eq!(parse("*.Foo.COM"), Ok(HostMatch::Suffix(".foo.com".into())));
        for (s, why) in [
            ("a.com:80", "port"),
            ("", "empty"),
            ("*", "omit"),
            ("a.*.com", "first label"),
            ("a..com", "empty label"),
            ("a.com.", "empty label"),
            ("a b.com", "not allowed"),
        ] {
            let err = parse(s).unwrap_err();
            assert!(err.contains(why), "{s:?}: {err}");
        }
    }

    #[test]
    fn host_header_values() {
        for s in [
            "example.com",
            "Example.COM:8080",
            "10.0.0.1",
            "10.0.0.1:80",
            "[::1]",
            "[::1]:8080",
            "localhost",
            "a_b-c",
        ] {
            assert_eq!(header_value(s, "health host"), Ok(()), "{s:?}");
        }
        for (s, why) in [
            ("", "empty"),
            ("a b", "' ' is not allowed"),
            ("a/b", "'/' is not allowed"),
            ("http://a", "'/' is not allowed"),
            ("a:", "port ``"),
            ("a:0", "port `0`"),
            ("a:65536", "port `65536`"),
            ("a:x", "port `x`"),
            (":80", "missing"),
            ("::1", "brackets"),
            ("[::1", "missing `]`"),
            ("[nope]", "not an IPv6"),
            ("[::1]x", "only `:PORT`"),
            ("a..b", "empty label"),
            ("a*.b", "`*` is not allowed"),
        ] {
            let err = header_value(s, "health host").unwrap_err();
            assert!(err.contains(why), "{s:?}: {err}");
        }
    }
}
