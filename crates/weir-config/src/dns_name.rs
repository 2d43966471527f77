//! Endpoints given by a DNS name (`api.internal:8080`, `_http._tcp.api.internal`), checked as
//! DNS spells names, so a typo is an error at its line and column rather than a name that
//! never resolves. Resolving is not done here: an endpoint source follows the names.

/// An endpoint as the API and `weir ctl` name it: `IP:PORT`, `HOST:PORT` or an SRV name,
/// in its one spelling (`[::1]:80`, not `[0:0::1]:80`), or why it is none of them.
pub fn endpoint_target(s: &str) -> Result<String, String> {
    if let Ok(a) = crate::addr::parse(s, crate::addr::Use::Endpoint) {
        return Ok(a.to_string());
    }
    if s.starts_with('_') && !s.contains(':') {
        return srv(s);
    }
    match looks_named(s) {
        true => host_port(s).map(|_| s.to_owned()),
        false => crate::addr::parse(s, crate::addr::Use::Endpoint).map(|a| a.to_string()),
    }
}

/// Whether `s` (not an `IP:PORT`) was meant as `HOST:PORT`: its host has a letter and no
/// colon (an IPv6 address written wrong gets the address's message instead).
pub(crate) fn looks_named(s: &str) -> bool {
    let host = s.rsplit_once(':').map_or(s, |(h, _)| h);
    host.chars().any(|c| c.is_ascii_alphabetic()) && !host.contains(':') && !host.starts_with('[')
}

/// The longest name DNS carries, without its final dot.
const MAX_NAME: usize = 253;
const MAX_LABEL: usize = 63;

/// `host:port`, where `host` is a DNS name (not an IP address: the caller tried that first).
pub(crate) fn host_port(s: &str) -> Result<(String, u16), String> {
    let Some((host, port)) = s.rsplit_once(':') else {
        return Err(format!(
            "invalid address \"{s}\": missing port; write HOST:PORT, e.g. \"api.internal:8080\""
        ));
    };
    let port: u16 = port
        .parse()
        .map_err(|_| format!("invalid address \"{s}\": `{port}` is not a port number (0-65535)"))?;
    if port == 0 {
        return Err(format!(
            "invalid endpoint address \"{s}\": port 0 cannot be connected to"
        ));
    }
    check(host).map_err(|why| format!("invalid address \"{s}\": {why}"))?;
    Ok((host.to_owned(), port))
}

/// An SRV name: `_service._proto.name` (RFC 2782).
pub(crate) fn srv(s: &str) -> Result<String, String> {
    let mut labels = s.split('.');
    let (Some(service), Some(proto)) = (labels.next(), labels.next()) else {
        return Err(srv_shape(s));
    };
    if !service.starts_with('_') || !proto.starts_with('_') || labels.next().is_none() {
        return Err(srv_shape(s));
    }
    check(s).map_err(|why| format!("invalid SRV name \"{s}\": {why}"))?;
    Ok(s.to_owned())
}

fn srv_shape(s: &str) -> String {
    format!(
        "invalid SRV name \"{s}\": expected _SERVICE._PROTO.NAME, e.g. \"_http._tcp.api.internal\""
    )
}

/// Whether `host` is a DNS name weir can ask for: labels of letters, digits, `-` and `_`.
fn check(host: &str) -> Result<(), String> {
    let name = host.strip_suffix('.').unwrap_or(host);
    if name.is_empty() {
        return Err("the host name is empty".into());
    }
    if name.len() > MAX_NAME {
        return Err(format!(
            "the name is {} characters long; DNS names have at most {MAX_NAME}",
            name.len()
        ));
    }
    for label in name.split('.') {
        if label.is_empty() {
            return Err("a name has no empty label (`..`, or a leading dot)".into());
        }
        if label.len() > MAX_LABEL {
            return Err(format!(
                "label `{label}` is {} characters long; a label has at most {MAX_LABEL}",
                label.len()
            ));
        }
        if let Some(c) = label
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
        {
            return Err(format!(
                "`{c}` cannot be part of a host name (letters, digits, `-`, `_` and dots)"
            ));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(format!("label `{label}` starts or ends with `-`"));
        }
    }
    // `1.2.3` or `10.0.0.256` is a mistyped address, not a name.
    if name
        .rsplit('.')
        .next()
        .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(format!(
            "`{host}` is not an IP address, and a host name does not end in a number"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_ports_and_srv_names() {
        assert_eq!(
            host_port("api.internal:8080").unwrap(),
            ("api.internal".into(), 8080)
        );
        assert_eq!(host_port("db:5432").unwrap(), ("db".into(), 5432));
        assert!(host_port("my_service.consul.:80").is_ok());
        for (s, why) in [
            ("api.internal", "missing port"),
            ("api.internal:http", "not a port"),
            ("api.internal:0", "port 0"),
            ("api..internal:80", "empty label"),
            ("api internal:80", "cannot be part"),
            ("-api.internal:80", "starts or ends"),
            ("1.2.3:80", "not an IP address"),
            (":80", "empty"),
        ] {
            let err = host_port(s).unwrap_err();
            assert!(err.contains(why), "{s:?}: {err}");
        }
        let long = format!("{}.internal:80", "a".repeat(64));
        assert!(host_port(&long).unwrap_err().contains("at most 63"));
        assert!(srv("_http._tcp.api.internal").is_ok());
        assert_eq!(endpoint_target("[0:0::1]:80").unwrap(), "[::1]:80");
        assert_eq!(
            endpoint_target("api.internal:80").unwrap(),
            "api.internal:80"
        );
        assert!(endpoint_target("_http._tcp.api").is_ok());
        assert!(endpoint_target("10.0.0.1")
            .unwrap_err()
            .contains("missing port"));
        assert!(endpoint_target("a b:80").is_err());
        for s in ["api.internal", "_http.api", "_http._tcp", "_http._tcp.a b"] {
            assert!(srv(s).is_err(), "{s:?}");
        }
    }
}
