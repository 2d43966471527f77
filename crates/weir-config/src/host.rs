//! Route host patterns: `lb.foo.com` or `*.foo.com`, stored lower-cased.
//!
//! Matching is on the name only; the router strips the port from the request's
//! Host header, so a port in the pattern could never match and is an error.

use crate::HostMatch;

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
}
