//! `kind = "rewrite"`: the path (prefix stripped, regex replaced, prefix added; or replaced
//! whole) and the Host the upstream gets. The query is kept as it was.

use std::borrow::Cow;

use http::header::HeaderValue;
use http::{Request, Uri};
use weir_config::filter::PathRewrite;

use crate::cx::Cx;
use crate::kind::Kind;
use crate::statics;
use crate::verdict::Verdict;
use weir_codec::client_body::ClientBody;

const X_FORWARDED_PREFIX: &str = "x-forwarded-prefix";

#[derive(Debug)]
pub struct Rewrite {
    strip_prefix: Option<String>,
    regex: Option<PathRewrite>,
    add_prefix: Option<String>,
    replace_path: Option<String>,
    host: Option<HeaderValue>,
}

impl Rewrite {
    pub fn build(r: &weir_config::filter::Rewrite) -> Result<Rewrite, String> {
        let regex = r.path_regex.as_ref().map(|p| p.compiled()).transpose()?;
        Ok(Rewrite {
            // `/api/` strips as `/api` does: the slash stays with the rest of the path.
            strip_prefix: r
                .strip_prefix
                .as_ref()
                .map(|p| p.trim_end_matches('/').to_string()),
            regex,
            add_prefix: r.add_prefix.clone(),
            replace_path: r.replace_path.clone(),
            host: r.host.as_deref().and_then(statics::value),
        })
    }
}

impl Kind for Rewrite {
    fn build(_name: &str, f: &weir_config::Filter) -> Option<Result<Self, String>> {
        let weir_config::Filter::Rewrite(r) = f else {
            return None;
        };
        Some(Rewrite::build(r))
    }

    fn request(&self, cx: &mut Cx<'_>, req: &mut Request<ClientBody>) -> Verdict {
        if let Some(h) = &self.host {
            cx.upstream_host = Some(h.clone());
        }
        // Borrowed until a step changes it: most rewrites leave most paths as they were.
        let path = req.uri().path();
        let mut new = Cow::Borrowed(match &self.replace_path {
            Some(p) => p.as_str(),
            None => path,
        });
        let mut prefix_stripped = None;
        if let Some(prefix) = &self.strip_prefix {
            if let Some(rest) = strip(&new, prefix) {
                new = Cow::Owned(match rest {
                    "" => "/".to_string(),
                    r => r.to_string(),
                });
                prefix_stripped = Some(if prefix.is_empty() { "/" } else { prefix });
            }
        }
        if let Some(rewrite) = &self.regex {
            let changed = match rewrite.apply(&new) {
                Some(Cow::Owned(s)) if s.starts_with('/') => Some(s),
                Some(s) if !s.starts_with('/') => Some(format!("/{s}")),
                _ => None,
            };
            if let Some(s) = changed {
                new = Cow::Owned(s);
            }
        }
        if let Some(prefix) = &self.add_prefix {
            new = Cow::Owned(join(prefix, &new));
        }
        if new != path {
            let new = new.into_owned();
            set_path(req, &new);
        }
        if let Some(shown) = prefix_stripped.and_then(|p| HeaderValue::from_str(p).ok()) {
            req.headers_mut().insert(X_FORWARDED_PREFIX, shown);
        }
        Verdict::Continue
    }
}

/// `path` below `prefix` (`/api` takes `/api` and `/api/x`, not `/apix`).
fn strip<'p>(path: &'p str, prefix: &str) -> Option<&'p str> {
    let rest = path.strip_prefix(prefix)?;
    (rest.is_empty() || rest.starts_with('/')).then_some(rest)
}

fn join(prefix: &str, path: &str) -> String {
    match (prefix.ends_with('/'), path.starts_with('/')) {
        (true, true) => format!("{prefix}{}", &path[1..]),
        (false, false) => format!("{prefix}/{path}"),
        _ => format!("{prefix}{path}"),
    }
}

/// Replaces the target's path (origin form), keeping its query.
pub(super) fn set_path<B>(req: &mut Request<B>, path: &str) {
    let target = match req.uri().query() {
        Some(q) => format!("{path}?{q}"),
        None => path.to_string(),
    };
    match Uri::try_from(target) {
        Ok(u) => *req.uri_mut() = u,
        // The config allows only path characters, and captures come from a valid path.
        Err(e) => tracing::debug!("rewrite made an invalid target, left unchanged: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_takes_whole_segments_and_join_keeps_one_slash() {
        assert_eq!(strip("/api/x", "/api"), Some("/x"));
        assert_eq!(strip("/api", "/api"), Some(""));
        assert_eq!(strip("/apix", "/api"), None);
        assert_eq!(join("/v2", "/x"), "/v2/x");
        assert_eq!(join("/v2/", "/x"), "/v2/x");
    }
}
