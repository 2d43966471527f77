//! `kind = "error_pages"` (response phase only): an answer whose status is listed, weir's own
//! or the upstream's, gets its body replaced, its status and other fields (`Retry-After`,
//! `WWW-Authenticate`, `x-weir-reason`, cookies) kept and the fields that described the old
//! body (length, encoding, validators, ranges) dropped. The new body is:
//!
//! - `application/problem+json` (RFC 9457) when the client's `Accept` prefers JSON to HTML,
//!   with weir's reason as `detail` when the answer was weir's;
//! - else the file's page, read when the filter is built and looked at once a second after
//!   (`file_watch.rs`): a changed file that reads replaces the page, one that does not keeps
//!   the page there was;
//! - else the pool's page for the status, fetched with a GET through the pool's own tries
//!   (capacity, balancing, retries), bounded in size and time; when the fetch fails or the
//!   page is not a 2xx, the answer goes out unchanged.
//!
//! The old body is dropped: weir's own is a buffer; an upstream's unread body closes its
//! connection rather than returning it to the pool. A HEAD answer gets the page's fields and no
//! body. gRPC calls are never touched (their errors are trailers, not pages).

use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use weir_config::filter::{Page, MAX_PAGE};

use crate::cx::{Cx, Reads};
use crate::kind::Kind;
use crate::port::{OnBehalfOf, Sent, SubRequest};
use crate::verdict::{Later, Verdict};
use weir_codec::client_body::ClientBody;
use weir_http::body::ProxyBody;
use weir_transport::file_stamp::stamp;
use weir_transport::file_watch;
use weir_upstream::error::{Deadline, Limit};

#[derive(Debug)]
pub struct ErrorPages {
    statuses: weir_config::filter::ErrorPages,
    source: Source,
}

#[derive(Debug)]
enum Source {
    File {
        /// The file's page; replaced when the file changes (`file_watch.rs`).
        body: Arc<ArcSwap<Bytes>>,
        content_type: HeaderValue,
    },
    Pool {
        pool: Arc<str>,
        path: String,
        timeout: Duration,
    },
}

impl ErrorPages {
    pub fn build(e: &weir_config::filter::ErrorPages) -> Result<ErrorPages, String> {
        let source = match &e.page {
            Page::File { path, content_type } => {
                // Stamped first: a change made while it is read is seen by the watch.
                let seen = stamp(path);
                let page = weir_config::filter::read_page(path)
                    .map(Bytes::from)
                    .map_err(|e| format!("error page: {e}"))?;
                let body = Arc::new(ArcSwap::from_pointee(page));
                file_watch::watch(
                    &body,
                    path.clone(),
                    seen,
                    "error page",
                    weir_config::filter::read_page,
                    |body, page| {
                        let n = page.len();
                        body.store(Arc::new(Bytes::from(page)));
                        format!("{n} bytes")
                    },
                );
                Source::File {
                    body,
                    content_type: HeaderValue::from_str(content_type)
                        .map_err(|_| format!("invalid content_type {content_type:?}"))?,
                }
            }
            Page::Pool {
                pool,
                path,
                timeout,
            } => Source::Pool {
                pool: pool.as_str().into(),
                path: path.clone(),
                timeout: *timeout,
            },
        };
        Ok(ErrorPages {
            statuses: e.clone(),
            source,
        })
    }
}

impl Kind for ErrorPages {
    fn build(_name: &str, f: &weir_config::Filter) -> Option<Result<Self, String>> {
        let weir_config::Filter::ErrorPages(e) = f else {
            return None;
        };
        Some(ErrorPages::build(e))
    }

    /// The Host a pool's page is fetched with.
    fn reads(&self) -> Reads {
        Reads {
            uri: false,
            host: true,
        }
    }

    /// Only remembers the request's `Accept` (a page or problem+json).
    fn request(&self, cx: &mut Cx<'_>, req: &mut Request<ClientBody>) -> Verdict {
        cx.accept = req.headers().get(header::ACCEPT).cloned();
        Verdict::Continue
    }

    /// The page for the answer's status from the pool (the answer is left as it is when the
    /// pool does not give one).
    async fn wait_response(&self, cx: &mut Cx<'_>, resp: &mut Response<ProxyBody>) {
        let Source::Pool {
            pool,
            path,
            timeout,
        } = &self.source
        else {
            return;
        };
        let status = resp.status();
        let path = path.replace("{status}", status.as_str());
        if let Some((body, content_type)) = fetch(cx, pool, &path, *timeout).await {
            replace(resp, body, content_type, cx.method == Method::HEAD);
        }
    }

    /// Replaces the body now when the page is weir's own (a file, problem+json); a page from
    /// a pool is fetched by `wait_response`.
    fn response(&self, cx: &mut Cx<'_>, resp: &mut Response<ProxyBody>) -> Later {
        let status = resp.status();
        if !self.statuses.covers(status.as_u16())
            || cx.grpc
            || weir_http::grpc::is_grpc(resp.headers())
        {
            return Later::Done;
        }
        let (body, content_type) = match wants_json(cx.accept.as_ref()) {
            true => problem(status, resp),
            false => match &self.source {
                Source::File { body, content_type } => {
                    (Bytes::clone(&body.load()), content_type.clone())
                }
                Source::Pool { .. } => return Later::Wait,
            },
        };
        replace(resp, body, content_type, cx.method == Method::HEAD);
        Later::Done
    }
}

/// Fields that described the body being replaced.
const BODY_FIELDS: [header::HeaderName; 9] = [
    header::CONTENT_LENGTH,
    header::CONTENT_ENCODING,
    header::TRANSFER_ENCODING,
    header::CONTENT_RANGE,
    header::ACCEPT_RANGES,
    header::ETAG,
    header::LAST_MODIFIED,
    header::CONTENT_LANGUAGE,
    header::CONTENT_LOCATION,
];

fn replace(resp: &mut Response<ProxyBody>, body: Bytes, content_type: HeaderValue, head: bool) {
    let h = resp.headers_mut();
    for name in &BODY_FIELDS {
        h.remove(name);
    }
    h.remove(header::CONTENT_DISPOSITION);
    h.insert(header::CONTENT_TYPE, content_type);
    // A HEAD answer says the length the GET's page would have.
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    // The old body is dropped here (an upstream's closes its connection).
    *resp.body_mut() = ProxyBody::full(if head { Bytes::new() } else { body });
}

/// RFC 9457's problem object for the answer; weir's reason as `detail` on weir's own answers.
fn problem(status: StatusCode, resp: &Response<ProxyBody>) -> (Bytes, HeaderValue) {
    let mut p = serde_json::json!({
        "type": "about:blank",
        "title": status.canonical_reason().unwrap_or("Error"),
        "status": status.as_u16(),
    });
    let reason = resp
        .body()
        .is_generated()
        .then(|| resp.headers().get("x-weir-reason"))
        .flatten()
        .and_then(|v| v.to_str().ok());
    if let Some(r) = reason {
        p["detail"] = r.into();
    }
    let mut body = serde_json::to_vec(&p).unwrap_or_default();
    body.push(b'\n');
    (
        Bytes::from(body),
        HeaderValue::from_static("application/problem+json"),
    )
}

/// Whether `Accept` ranks JSON (`application/json`, `application/problem+json`) above HTML.
/// JSON counts only when named, so `*/*` alone gets the page; HTML's rank is `text/html`'s,
/// else `text/*`'s, else `*/*`'s, which JSON named at the same rank beats.
fn wants_json(accept: Option<&HeaderValue>) -> bool {
    let Some(s) = accept.and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let (mut json, mut html, mut text, mut any) = (None::<f32>, None, None, None);
    for item in s.split(',') {
        let mut parts = item.split(';');
        let ty = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = parts
            .find_map(|p| {
                let (k, v) = p.split_once('=')?;
                k.trim().eq_ignore_ascii_case("q").then(|| v.trim())
            })
            .map_or(1.0, |v| v.parse::<f32>().unwrap_or(0.0).clamp(0.0, 1.0));
        let slot = match ty.as_str() {
            "application/json" | "application/problem+json" => &mut json,
            "text/html" => &mut html,
            "text/*" => &mut text,
            "*/*" => &mut any,
            _ => continue,
        };
        *slot = Some(slot.map_or(q, |o: f32| o.max(q)));
    }
    let Some(json) = json.filter(|&j| j > 0.0) else {
        return false;
    };
    // A type named beats a wildcard of the same rank (`application/json, */*` is a JSON
    // client); against `text/html` or `text/*` named, JSON must rank higher.
    match html.or(text) {
        Some(h) => json > h,
        None => json >= any.unwrap_or(0.0),
    }
}

/// The pool's page at `path`: a 2xx, read whole within `timeout` and [`MAX_PAGE`].
async fn fetch(
    cx: &Cx<'_>,
    pool: &str,
    path: &str,
    timeout: Duration,
) -> Option<(Bytes, HeaderValue)> {
    let (mut head, ()) = Request::get(path).body(()).ok()?.into_parts();
    // The client's host, so one error service can serve pages per site.
    let host = cx
        .host()
        .cloned()
        .or_else(|| HeaderValue::from_str(pool).ok())?;
    head.headers.insert(header::HOST, host);
    head.headers.insert(
        header::ACCEPT,
        HeaderValue::from_static("text/html, */*;q=0.5"),
    );
    let deadline = Instant::now() + timeout;
    let page = async {
        let sent = cx
            .pipeline
            .send(SubRequest {
                pool,
                head,
                deadline: Deadline {
                    at: deadline,
                    limit: Limit {
                        name: "error_pages timeout",
                        of: timeout,
                    },
                },
                on_behalf_of: OnBehalfOf::Weir,
            })
            .await;
        let Sent::Answer(resp) = sent else {
            return None;
        };
        if !resp.status().is_success() {
            return None;
        }
        let content_type = page_type(resp.headers());
        // Read to its end, so the connection goes back to the pool.
        let body = Limited::new(resp.into_body(), MAX_PAGE as usize)
            .collect()
            .await
            .ok()?
            .to_bytes();
        Some((body, content_type))
    };
    let got = tokio::time::timeout_at(deadline.into(), page).await;
    if got.as_ref().map_or(true, Option::is_none) {
        tracing::debug!(
            pool,
            path,
            "error page not fetched: the answer goes out as it was"
        );
    }
    got.ok().flatten()
}

fn page_type(h: &HeaderMap) -> HeaderValue {
    h.get(header::CONTENT_TYPE)
        .cloned()
        .unwrap_or(HeaderValue::from_static("text/html; charset=utf-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_prefers_json_only_when_it_ranks_higher() {
        let j = |s: &'static str| wants_json(Some(&HeaderValue::from_static(s)));
        assert!(j("application/json"));
        assert!(j("application/problem+json"));
        assert!(j("application/json, text/plain, */*"));
        assert!(j("text/html;q=0.5, application/json"));
        assert!(!j("text/html, application/json"));
        assert!(!j(
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
        ));
        assert!(!j("*/*"));
        assert!(!j("application/json;q=0"));
        assert!(!j("application/json;q=0.5, */*"));
        assert!(!j("text/*, application/json;q=0.9"));
        assert!(!wants_json(None));
    }
}
