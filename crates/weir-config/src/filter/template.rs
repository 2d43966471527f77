//! Header values with variables: `"{client_ip}"`, `"id={request_id}"`. The text around the
//! variables is checked to be a valid header value here, and every variable's value is one by
//! construction (an address, a host and a path the request already carried as valid fields, a
//! generated id, a server name rustls accepted), so no substitution can put CR or LF into a
//! header.

/// A value made per request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub pieces: Vec<Piece>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Var(Var),
}

/// What a variable stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Var {
    /// The client's address (the resolved one, behind trusted proxies).
    ClientIp,
    /// The request's host, as the client sent it.
    Host,
    /// The request's id (see the headers filter's `request_id`), made if it has none yet.
    RequestId,
    /// The server name the client sent in its TLS handshake (empty without one).
    TlsSni,
    /// `http` or `https`.
    Scheme,
    /// The request method.
    Method,
    /// The request path as the client sent it (without the query).
    Path,
}

pub const VARS: &[(&str, Var)] = &[
    ("client_ip", Var::ClientIp),
    ("host", Var::Host),
    ("request_id", Var::RequestId),
    ("tls_sni", Var::TlsSni),
    ("scheme", Var::Scheme),
    ("method", Var::Method),
    ("path", Var::Path),
];

impl Template {
    /// Whether the value is the same for every request.
    pub fn literal(&self) -> Option<&str> {
        match self.pieces.as_slice() {
            [] => Some(""),
            [Piece::Text(t)] => Some(t),
            _ => None,
        }
    }
}

/// Parses `s`: `{name}` is a variable, `{{` and `}}` stand for a brace.
pub fn parse(s: &str) -> Result<Template, String> {
    if let Some(c) = s
        .chars()
        .find(|&c| !(c == '\t' || (' '..='~').contains(&c)))
    {
        return Err(format!(
            "{c:?} cannot be in a header value (only visible ASCII, space and tab)"
        ));
    }
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut rest = s;
    while let Some(i) = rest.find(['{', '}']) {
        text.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            text.push_str(&tail[..1]);
            rest = &tail[2..];
            continue;
        }
        if tail.starts_with('}') {
            return Err("a lone `}`: write `}}` for a brace".into());
        }
        let Some(end) = tail.find('}') else {
            return Err("`{` without its `}`: write `{{` for a brace".into());
        };
        let name = &tail[1..end];
        let Some((_, var)) = VARS.iter().find(|(n, _)| *n == name) else {
            let names: Vec<&str> = VARS.iter().map(|(n, _)| *n).collect();
            let hint = crate::suggest::did_you_mean(name, names.iter().copied());
            return Err(format!(
                "unknown variable `{{{name}}}`{hint} (variables: {})",
                names.join(", ")
            ));
        };
        if !text.is_empty() {
            pieces.push(Piece::Text(std::mem::take(&mut text)));
        }
        pieces.push(Piece::Var(*var));
        rest = &tail[end + 1..];
    }
    text.push_str(rest);
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(Template { pieces })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_text_and_braces() {
        let t = parse("ip={client_ip}, {{x}}").unwrap();
        assert_eq!(
            t.pieces,
            vec![
                Piece::Text("ip=".into()),
                Piece::Var(Var::ClientIp),
                Piece::Text(", {x}".into())
            ]
        );
        assert_eq!(parse("plain").unwrap().literal(), Some("plain"));
        assert!(parse("{clientip}")
            .unwrap_err()
            .contains("did you mean `client_ip`"));
        assert!(parse("a\r\nb").is_err());
        assert!(parse("caf\u{e9}").is_err());
        assert!(parse("{host").is_err());
        assert!(parse("a}b").is_err());
    }
}
