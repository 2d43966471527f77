//! `If-Match` / `If-None-Match` as the API uses them (DESIGN.md §3).

use http::HeaderMap;

use super::problem::Problem;

/// The preconditions of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pre {
    None,
    /// `If-None-Match: *`
    Absent,
    /// `If-None-Match: "N"` (reads only)
    NotVersion(Option<u64>),
    /// `If-Match: "N"`; None when the tag is not one of ours, so it can never match.
    Version(Option<u64>),
}

pub fn parse(headers: &HeaderMap) -> Result<Pre, Problem> {
    let get = |name: http::HeaderName| -> Result<Option<&str>, Problem> {
        let mut all = headers.get_all(&name).iter();
        match (all.next(), all.next()) {
            (None, _) => Ok(None),
            (Some(v), None) => v
                .to_str()
                .map(|s| Some(s.trim()))
                .map_err(|_| Problem::bad_request(format!("{name} is not valid text"))),
            _ => Err(Problem::bad_request(format!("more than one {name} header"))),
        }
    };
    let im = get(http::header::IF_MATCH)?;
    let inm = get(http::header::IF_NONE_MATCH)?;
    match (im, inm) {
        (Some(_), Some(_)) => Err(Problem::bad_request(
            "send If-Match (update, delete) or If-None-Match (add), not both",
        )),
        (Some("*"), None) => Err(Problem::bad_request(
            "If-Match: * is not accepted: name the version you are replacing, e.g. If-Match: \"3\"",
        )),
        (Some(tag), None) => Ok(Pre::Version(version(tag)?)),
        (None, Some("*")) => Ok(Pre::Absent),
        (None, Some(tag)) => Ok(Pre::NotVersion(version(tag)?)),
        (None, None) => Ok(Pre::None),
    }
}

/// `"3"` or `W/"3"` → Some(3); another quoted tag → None (it matches nothing).
fn version(tag: &str) -> Result<Option<u64>, Problem> {
    let t = tag.strip_prefix("W/").unwrap_or(tag);
    let inner = t
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .ok_or_else(|| {
            Problem::bad_request(format!(
                "{tag} is not an entity tag; send a quoted version like \"3\""
            ))
        })?;
    Ok(inner.parse().ok())
}

pub fn etag(version: u64) -> http::HeaderValue {
    http::HeaderValue::from_str(&format!("\"{version}\"")).expect("digits are a valid header")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pre(h: &[(&str, &str)]) -> Result<Pre, Problem> {
        let mut m = HeaderMap::new();
        for (k, v) in h {
            m.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        parse(&m)
    }

    #[test]
    fn parses_the_api_preconditions() {
        assert_eq!(pre(&[]).unwrap(), Pre::None);
        assert_eq!(pre(&[("if-none-match", "*")]).unwrap(), Pre::Absent);
        assert_eq!(
            pre(&[("if-match", "\"7\"")]).unwrap(),
            Pre::Version(Some(7))
        );
        assert_eq!(
            pre(&[("if-match", "W/\"7\"")]).unwrap(),
            Pre::Version(Some(7))
        );
        assert_eq!(pre(&[("if-match", "\"x\"")]).unwrap(), Pre::Version(None));
        assert_eq!(
            pre(&[("if-none-match", "\"2\"")]).unwrap(),
            Pre::NotVersion(Some(2))
        );
        assert!(pre(&[("if-match", "*")]).is_err());
        assert!(pre(&[("if-match", "7")]).is_err());
        assert!(pre(&[("if-match", "\"1\""), ("if-none-match", "*")]).is_err());
    }
}
