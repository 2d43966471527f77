//! A small blocking client for the admin API (docs/API.md): one request at a time, versions
//! read from ETags, errors from problem+json documents.

use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

/// The default admin address, as in `admin.listen`'s default.
pub const DEFAULT_URL: &str = "http://127.0.0.1:9901";

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// weir answered with an error status. Boxed: it is by far the largest variant, and
    /// every `Result` of the client carries its size.
    #[error("{0}")]
    Problem(Box<Problem>),
    #[error("cannot reach weir at {url}: {source}")]
    Transport {
        url: String,
        #[source]
        source: ureq::Error,
    },
    /// A 2xx answer that does not say what the API promises (no ETag, not JSON, ...): most
    /// likely `--url` points at something that is not weir's admin listener.
    #[error("unexpected answer to {method} {path}: {reason}")]
    Unexpected {
        method: &'static str,
        path: String,
        reason: String,
    },
}

impl ApiError {
    /// The HTTP status of a problem answer, so callers can handle 404 and 412 themselves.
    pub fn status(&self) -> Option<u16> {
        match self {
            ApiError::Problem(p) => Some(p.status),
            _ => None,
        }
    }
}

/// An RFC 9457 problem document; the fields `weir ctl` shows.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Problem {
    #[serde(default)]
    pub status: u16,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub detail: Option<String>,
    #[serde(default)]
    pub field: Option<String>,
    /// The failing change of a transaction.
    #[serde(default)]
    pub change: Option<usize>,
    /// What that change was (`put pools/app`): the index alone makes the reader count.
    #[serde(skip)]
    pub change_desc: Option<String>,
    #[serde(default)]
    pub errors: Vec<FieldError>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FieldError {
    #[serde(default)]
    pub field: Option<String>,
    #[serde(default)]
    pub message: String,
}

impl Problem {
    /// Reads a problem document; anything else (a proxy's HTML page, ...) becomes one whose
    /// title is the status and whose detail is the start of the body.
    fn from_answer(status: u16, body: &str) -> Problem {
        match serde_json::from_str::<Problem>(body) {
            Ok(mut p) if !p.title.is_empty() => {
                p.status = status;
                p
            }
            _ => {
                let text: String = body.trim().chars().take(200).collect();
                Problem {
                    status,
                    title: format!("HTTP {status}"),
                    detail: (!text.is_empty()).then_some(text),
                    ..Problem::default()
                }
            }
        }
    }
}

/// `<title>: <detail> (field <field>)`, then the other field errors, one per line.
impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.title)?;
        if let Some(d) = &self.detail {
            write!(f, ": {d}")?;
        }
        if let Some(field) = &self.field {
            write!(f, " (field {field})")?;
        }
        match (self.change, &self.change_desc) {
            (Some(c), Some(d)) => write!(f, " (change {c}: {d})")?,
            (Some(c), None) => write!(f, " (change {c})")?,
            _ => {}
        }
        // The first error is the one `detail` and `field` already describe.
        for e in self.errors.iter().skip(1) {
            match &e.field {
                Some(field) => write!(f, "\n  {field}: {}", e.message)?,
                None => write!(f, "\n  {}", e.message)?,
            }
        }
        Ok(())
    }
}

/// What a PUT or DELETE requires of the current state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition {
    /// `If-None-Match: *`: the resource must not exist.
    Absent,
    /// `If-Match: "N"`: the resource must be at version N.
    Version(u64),
    /// No header: only a lease registration may do this.
    None,
}

/// One resource of a list answer.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Item {
    pub name: String,
    pub version: u64,
    pub spec: Value,
}

#[derive(Debug, Clone, Deserialize)]
pub struct List {
    pub items: Vec<Item>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TxResult {
    pub revision: u64,
}

struct Answer {
    status: u16,
    etag: Option<String>,
    body: String,
}

pub struct Client {
    base: String,
    token: Option<String>,
    agent: ureq::Agent,
}

impl Client {
    pub fn new(url: &str, token: Option<String>) -> Client {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            // A ctl command must not hang on a stuck admin listener; every answer the API
            // gives is small and committed changes are fsynced well within this.
            .timeout_global(Some(Duration::from_secs(10)))
            .max_redirects(0)
            .build()
            .into();
        Client {
            base: url.trim_end_matches('/').to_owned(),
            token,
            agent,
        }
    }

    /// A resource and its version; `None` when it does not exist.
    pub fn get(&self, path: &str) -> Result<Option<(Value, u64)>, ApiError> {
        let a = self.call("GET", path, &[], None)?;
        if a.status == 404 {
            return Ok(None);
        }
        let a = ok(a)?;
        let version = etag_version(a.etag.as_deref()).ok_or_else(|| ApiError::Unexpected {
            method: "GET",
            path: path.to_owned(),
            reason: "no ETag".into(),
        })?;
        Ok(Some((json("GET", path, &a.body)?, version)))
    }

    pub fn list(&self, path: &str) -> Result<List, ApiError> {
        let a = ok(self.call("GET", path, &[], None)?)?;
        serde_json::from_str(&a.body).map_err(|e| ApiError::Unexpected {
            method: "GET",
            path: path.to_owned(),
            reason: format!("not a list: {e}"),
        })
    }

    /// Writes `spec`; returns the new version and whether the resource was created (201).
    pub fn put(
        &self,
        path: &str,
        spec: &Value,
        pre: Precondition,
    ) -> Result<(u64, bool), ApiError> {
        let header = precondition_header(pre);
        let headers: Vec<(&str, String)> = header.into_iter().collect();
        let a = ok(self.call("PUT", path, &headers, Some(spec.to_string()))?)?;
        let version = etag_version(a.etag.as_deref()).ok_or_else(|| ApiError::Unexpected {
            method: "PUT",
            path: path.to_owned(),
            reason: "no ETag".into(),
        })?;
        Ok((version, a.status == 201))
    }

    pub fn delete(&self, path: &str, version: u64) -> Result<(), ApiError> {
        let headers: Vec<(&str, String)> = precondition_header(Precondition::Version(version))
            .into_iter()
            .collect();
        ok(self.call("DELETE", path, &headers, None)?)?;
        Ok(())
    }

    pub fn transaction(&self, changes: Vec<Value>) -> Result<TxResult, ApiError> {
        let body = serde_json::json!({ "changes": &changes }).to_string();
        let a = match ok(self.call("POST", "transaction", &[], Some(body))?) {
            Ok(a) => a,
            Err(ApiError::Problem(mut p)) => {
                // The index counts from 0, in the order the changes were sent.
                if let Some(c) = p.change.and_then(|i| changes.get(i)) {
                    let op = c["op"].as_str().unwrap_or("?");
                    let path = c["path"].as_str().unwrap_or("?");
                    p.change_desc = Some(format!("{op} {path}"));
                }
                return Err(ApiError::Problem(p));
            }
            Err(e) => return Err(e),
        };
        serde_json::from_str(&a.body).map_err(|e| ApiError::Unexpected {
            method: "POST",
            path: "transaction".into(),
            reason: e.to_string(),
        })
    }

    /// POSTs without a body (heartbeats).
    pub fn post_empty(&self, path: &str) -> Result<(), ApiError> {
        ok(self.call("POST", path, &[], None)?)?;
        Ok(())
    }

    /// A GET whose body is returned as text, unparsed (`export`).
    pub fn get_text(&self, path: &str) -> Result<String, ApiError> {
        Ok(ok(self.call("GET", path, &[], None)?)?.body)
    }

    fn call(
        &self,
        method: &'static str,
        path: &str,
        headers: &[(&str, String)],
        body: Option<String>,
    ) -> Result<Answer, ApiError> {
        let url = format!("{}/api/v1/{}", self.base, encode_path(path));
        let mut req = ureq::http::Request::builder().method(method).uri(&url);
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        if let Some(t) = &self.token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        if body.is_some() {
            req = req.header("content-type", "application/json");
        }
        let transport = |source: ureq::Error| ApiError::Transport {
            url: self.base.clone(),
            source,
        };
        // A body only when there is one: an empty string would still send `Content-Length: 0`.
        let sent = match &body {
            Some(b) => req.body(b.as_str()).map(|r| self.agent.run(r)),
            None => req.body(ureq::SendBody::none()).map(|r| self.agent.run(r)),
        };
        let mut resp = sent
            .map_err(|e| transport(ureq::Error::Http(e)))?
            .map_err(transport)?;
        let status = resp.status().as_u16();
        let etag = resp
            .headers()
            .get("etag")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = resp.body_mut().read_to_string().map_err(transport)?;
        Ok(Answer { status, etag, body })
    }
}

fn ok(a: Answer) -> Result<Answer, ApiError> {
    if (200..300).contains(&a.status) {
        Ok(a)
    } else {
        Err(ApiError::Problem(Box::new(Problem::from_answer(
            a.status, &a.body,
        ))))
    }
}

fn json(method: &'static str, path: &str, body: &str) -> Result<Value, ApiError> {
    serde_json::from_str(body).map_err(|e| ApiError::Unexpected {
        method,
        path: path.to_owned(),
        reason: format!("not JSON: {e}"),
    })
}

fn precondition_header(pre: Precondition) -> Option<(&'static str, String)> {
    match pre {
        Precondition::Absent => Some(("if-none-match", "*".into())),
        Precondition::Version(v) => Some(("if-match", format!("\"{v}\""))),
        Precondition::None => None,
    }
}

/// The version in an ETag: `"17"`, or weak `W/"17"`.
pub fn etag_version(etag: Option<&str>) -> Option<u64> {
    let e = etag?.trim();
    let e = e.strip_prefix("W/").unwrap_or(e);
    e.trim_matches('"').parse().ok()
}

/// A path as a URI needs it: an endpoint address keeps its colons, but IPv6 brackets (and
/// anything else outside the unreserved set) are percent-encoded. Paths are built unencoded
/// because transactions name resources by the same paths, in JSON, where no encoding applies.
pub fn encode_path(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~:/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etag_versions() {
        assert_eq!(etag_version(Some("\"17\"")), Some(17));
        assert_eq!(etag_version(Some("W/\"3\"")), Some(3));
        assert_eq!(etag_version(Some("\"x\"")), None);
        assert_eq!(etag_version(None), None);
    }

    #[test]
    fn paths_encode_ipv6_brackets() {
        assert_eq!(
            encode_path("pools/a/endpoints/10.0.0.1:80"),
            "pools/a/endpoints/10.0.0.1:80"
        );
        assert_eq!(
            encode_path("pools/a/endpoints/[::1]:80"),
            "pools/a/endpoints/%5B::1%5D:80"
        );
        assert_eq!(encode_path("pools/a b"), "pools/a%20b");
    }

    #[test]
    fn problem_display() {
        let p = Problem::from_answer(
            422,
            r#"{"type":"urn:weir:problem:invalid-config","title":"the change makes the configuration invalid","status":422,
               "detail":"pools/app: max_queue needs max_conn > 0","field":"pools/app/max_queue",
               "errors":[{"field":"pools/app/max_queue","message":"a"},{"field":"routes/x/pool","message":"no pool named `y`"}]}"#,
        );
        assert_eq!(
            p.to_string(),
            "the change makes the configuration invalid: pools/app: max_queue needs max_conn > 0 \
             (field pools/app/max_queue)\n  routes/x/pool: no pool named `y`"
        );
        let p = Problem::from_answer(502, "<html>bad gateway</html>");
        assert_eq!(p.to_string(), "HTTP 502: <html>bad gateway</html>");
    }
}
