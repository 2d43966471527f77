//! `If-Match` / `If-None-Match` as the API uses them (docs/DESIGN.md §3).

use http::HeaderMap;

use super::problem::Problem;

/// The preconditions of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pre {
    None,
    /// `If-None-Match: *`
    Absent,
    /// `If-None-Match: "N", ...` (reads only)
    NotVersion(Vec<u64>),
    /// `If-Match: "N", ...`: the versions named; tags that are not ours are left out, since
    /// they can never match (RFC 9110 §13.1.1: any tag in the list may match).
    Version(Vec<u64>),
}

pub fn parse(headers: &HeaderMap) -> Result<Pre, Problem> {
    // Several header lines are one comma-separated list (RFC 9110 §5.3).
    let get = |name: http::HeaderName| -> Result<Option<String>, Problem> {
        let mut parts = Vec::new();
        for v in headers.get_all(&name) {
            let v = v
                .to_str()
                .map_err(|_| Problem::bad_request(format!("{name} is not valid text")))?;
            parts.push(v.trim().to_owned());
        }
        Ok((!parts.is_empty()).then(|| parts.join(", ")))
    };
    let im = get(http::header::IF_MATCH)?;
    let inm = get(http::header::IF_NONE_MATCH)?;
    match (im.as_deref(), inm.as_deref()) {
        (Some(_), Some(_)) => Err(Problem::bad_request(
            "send If-Match (update, delete) or If-None-Match (add), not both",
        )),
        (Some("*"), None) => Err(Problem::bad_request(
            "If-Match: * is not accepted: name the version you are replacing, e.g. If-Match: \"3\"",
        )),
        (Some(tags), None) => Ok(Pre::Version(versions(tags)?)),
        (None, Some("*")) => Ok(Pre::Absent),
        (None, Some(tags)) => Ok(Pre::NotVersion(versions(tags)?)),
        (None, None) => Ok(Pre::None),
    }
}

/// `"3"`, `W/"3"`, `"3", "4"` → the versions; quoted tags that are not ours are skipped.
fn versions(tags: &str) -> Result<Vec<u64>, Problem> {
    let mut out = Vec::new();
    for tag in tags.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let t = tag.strip_prefix("W/").unwrap_or(tag);
        let inner = t
            .strip_prefix('"')
            .and_then(|t| t.strip_suffix('"'))
            .ok_or_else(|| {
                Problem::bad_request(format!(
                    "{tag} is not an entity tag; send a quoted version like \"3\""
                ))
            })?;
        if let Ok(v) = inner.parse() {
            out.push(v);
        }
    }
    Ok(out)
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
            Pre::Version(vec![7])
        );
        assert_eq!(
            pre(&[("if-match", "W/\"7\"")]).unwrap(),
            Pre::Version(vec![7])
        );
        assert_eq!(pre(&[("if-match", "\"x\"")]).unwrap(), Pre::Version(vec![]));
        assert_eq!(
            pre(&[("if-match", "\"1\", \"6\"")]).unwrap(),
            Pre::Version(vec![1, 6])
        );
        assert_eq!(
            pre(&[("if-none-match", "\"1\""), ("if-none-match", "\"6\"")]).unwrap(),
            Pre::NotVersion(vec![1, 6])
        );
        assert_eq!(
            pre(&[("if-none-match", "\"2\"")]).unwrap(),
            Pre::NotVersion(vec![2])
        );
        assert!(pre(&[("if-match", "*")]).is_err());
        assert!(pre(&[("if-match", "7")]).is_err());
        assert!(pre(&[("if-match", "\"1\""), ("if-none-match", "*")]).is_err());
    }
}
