//! `kind = "forward_auth"`: the request is first put to an auth service, as Traefik's
//! ForwardAuth and nginx's `auth_request` do. The service is a weir pool, asked through
//! weir's own pipeline (its port, `port.rs`: the pool's capacity, balancing, health,
//! retries, the h1/h2 clients, TLS), with a GET without body to `path` carrying the chosen request fields and
//! `X-Forwarded-Method`, `-Uri`, `-Host`, `-Proto`, `-For`.
//!
//! - 2xx, its body read to the end within [`MAX_BODY`] and `timeout`: the request goes on,
//!   with the chosen answer fields copied onto it (the client's own values of those names are
//!   always removed first, so none can be forged);
//! - 5xx, no answer, an answer body over [`MAX_BODY`] or cut short, or an answer not whole
//!   within `timeout` (its body included; a 2xx head alone is no yes): 503
//!   `auth_unavailable`, fail closed;
//! - anything else (401, 403, a 302 to a login page): returned to the client as the
//!   service sent it (hop-by-hop fields dropped), counted as `unauthorized`.
//!
//! With `cache_ttl`, a 2xx is remembered (the fields it had to copy) by the values of the
//! `cache_key` fields, at most [`CACHE_MAX`] answers, so the service sees one request per
//! client and period.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http::header::{self, HeaderName, HeaderValue};
use http::{HeaderMap, Method, Request, Response, Uri, Version};
use http_body_util::BodyExt;
use sha2::{Digest, Sha256};

use crate::cx::{Cx, Reads};
use crate::kind::Kind;
use crate::port::{OnBehalfOf, Sent, SubRequest};
use crate::verdict::Verdict;
use weir_codec::client_body::ClientBody;
use weir_http::body::ProxyBody;
use weir_http::error::error_response;
use weir_http::headers::{add_forwarded, strip_hop_by_hop};
use weir_metrics::reason::Reason;
use weir_upstream::error::Deadline;

/// The largest answer body relayed; a larger one fails closed.
pub const MAX_BODY: usize = 64 << 10;
/// At most this many answers are remembered at once.
const CACHE_MAX: usize = 10_000;

static X_FORWARDED_METHOD: HeaderName = HeaderName::from_static("x-forwarded-method");
static X_FORWARDED_URI: HeaderName = HeaderName::from_static("x-forwarded-uri");

type Copied = Arc<[(HeaderName, HeaderValue)]>;

#[derive(Debug)]
pub struct ForwardAuth {
    name: Arc<str>,
    pool: Arc<str>,
    path: Uri,
    request_headers: Vec<HeaderName>,
    response_headers: Vec<HeaderName>,
    timeout: Duration,
    cache: Option<Cache>,
}

#[derive(Debug)]
struct Cache {
    ttl: Duration,
    key: Vec<HeaderName>,
    /// By the SHA-256 of the key fields' values.
    answers: Mutex<HashMap<[u8; 32], (Instant, Copied)>>,
}

/// What the auth service said, or why it could not.
enum Asked {
    Yes(Copied),
    No(Box<Response<ProxyBody>>),
    Unavailable(String),
}

fn names(list: &[String]) -> Result<Vec<HeaderName>, String> {
    list.iter()
        .map(|n| HeaderName::from_bytes(n.as_bytes()).map_err(|e| format!("{n}: {e}")))
        .collect()
}

impl ForwardAuth {
    pub fn build(name: &str, f: &weir_config::filter::ForwardAuth) -> Result<ForwardAuth, String> {
        Ok(ForwardAuth {
            name: name.into(),
            pool: f.pool.as_str().into(),
            path: Uri::try_from(f.path.as_str()).map_err(|e| e.to_string())?,
            request_headers: names(&f.request_headers)?,
            response_headers: names(&f.response_headers)?,
            timeout: f.timeout,
            cache: match f.cache_ttl {
                Some(ttl) => Some(Cache {
                    ttl,
                    key: names(&f.cache_key)?,
                    answers: Mutex::new(HashMap::new()),
                }),
                None => None,
            },
        })
    }

    fn unavailable(&self, why: &str) -> Verdict {
        // Once per filter and cause per period: a dead auth service fails every request.
        weir_metrics::warn_limited!(
            (&*self.name, why),
            filter = &*self.name,
            pool = &*self.pool,
            "forward_auth: auth service unavailable, request refused: {why}"
        );
        Verdict::Answer(
            Box::new(error_response(Reason::AuthUnavailable)),
            Reason::AuthUnavailable,
        )
    }

    /// One auth request through the pool, its answer body read within [`MAX_BODY`].
    async fn ask(&self, cx: &Cx<'_>, headers: &HeaderMap) -> Asked {
        let (head, ()) = self.sub_request(cx, headers).into_parts();
        let sent = cx
            .pipeline
            .send(SubRequest {
                pool: &self.pool,
                head,
                deadline: Deadline::after(Instant::now(), "forward_auth timeout", self.timeout),
                on_behalf_of: OnBehalfOf::Client(cx.client),
            })
            .await;
        let resp = match sent {
            Sent::Answer(resp) => resp,
            Sent::NoPool => return Asked::Unavailable(format!("no pool `{}`", self.pool)),
            Sent::Failed(why) => return Asked::Unavailable(why),
        };
        let (mut head, body) = resp.into_parts();
        if head.status.is_server_error() {
            return Asked::Unavailable(format!("the service answered {}", head.status));
        }
        // A yes counts only when the whole answer came within bounds: a head followed by a
        // body that is cut, too large or never ends is a service that failed.
        let body = match bounded(body).await {
            Ok(b) => b,
            Err(why) => return Asked::Unavailable(why),
        };
        if head.status.is_success() {
            let copied: Vec<_> = self
                .response_headers
                .iter()
                .flat_map(|n| {
                    head.headers
                        .get_all(n)
                        .iter()
                        .map(|v| (n.clone(), v.clone()))
                })
                .collect();
            return Asked::Yes(copied.into());
        }
        strip_hop_by_hop(&mut head.headers);
        // The server codec frames the body it is given.
        head.headers.remove(header::CONTENT_LENGTH);
        Asked::No(Box::new(Response::from_parts(head, ProxyBody::full(body))))
    }

    fn sub_request(&self, cx: &Cx<'_>, headers: &HeaderMap) -> Request<()> {
        let mut req = Request::new(());
        *req.method_mut() = Method::GET;
        *req.uri_mut() = self.path.clone();
        *req.version_mut() = Version::HTTP_11;
        let h = req.headers_mut();
        for n in &self.request_headers {
            for v in headers.get_all(n) {
                h.append(n.clone(), v.clone());
            }
        }
        h.insert(
            X_FORWARDED_METHOD.clone(),
            HeaderValue::from_str(cx.method.as_str()).expect("a method is a header value"),
        );
        let pq = cx
            .uri()
            .and_then(|u| u.path_and_query())
            .map_or("/", |p| p.as_str());
        if let Ok(v) = HeaderValue::from_str(pq) {
            h.insert(X_FORWARDED_URI.clone(), v);
        }
        // As the upstream would get them: from a trusted proxy, its list with the peer
        // after; from anyone else, weir's own only.
        let trusted = cx.conn.trusted.is_some();
        if trusted {
            for n in [
                HeaderName::from_static("x-forwarded-for"),
                header::FORWARDED,
            ] {
                for v in headers.get_all(&n) {
                    h.append(n.clone(), v.clone());
                }
            }
        }
        add_forwarded(h, &cx.conn.forwarding(), cx.host(), trusted);
        // The request's host; HTTP/1.0 may have none, and HTTP/2 needs one.
        let host = cx
            .host
            .clone()
            .or_else(|| HeaderValue::from_str(&self.pool).ok());
        if let Some(host) = host {
            h.insert(header::HOST, host);
        }
        req
    }
}

impl Kind for ForwardAuth {
    fn build(name: &str, f: &weir_config::Filter) -> Option<Result<Self, String>> {
        let weir_config::Filter::ForwardAuth(c) = f else {
            return None;
        };
        Some(ForwardAuth::build(name, c))
    }

    /// `X-Forwarded-Uri` and `-Host`.
    fn reads(&self) -> Reads {
        Reads {
            uri: true,
            host: true,
        }
    }

    /// A request whose key the cache holds goes on now; any other asks the service
    /// ([`ForwardAuth::wait`]).
    fn request(&self, _cx: &mut Cx<'_>, req: &mut Request<ClientBody>) -> Verdict {
        // Only the auth service says what these are.
        for n in &self.response_headers {
            req.headers_mut().remove(n);
        }
        let Some(c) = &self.cache else {
            return Verdict::Wait;
        };
        match c.get(&c.key_of(req.headers())) {
            Some(copied) => {
                copy(req.headers_mut(), &copied);
                Verdict::Continue
            }
            None => Verdict::Wait,
        }
    }

    /// Asks the auth service (within the filter's timeout) and remembers a yes.
    async fn wait(&self, cx: &mut Cx<'_>, req: &mut Request<ClientBody>) -> Verdict {
        let key = self.cache.as_ref().map(|c| c.key_of(req.headers()));
        match tokio::time::timeout(self.timeout, self.ask(cx, req.headers())).await {
            Ok(Asked::Yes(copied)) => {
                copy(req.headers_mut(), &copied);
                if let (Some(c), Some(k)) = (&self.cache, key) {
                    c.put(k, copied);
                }
                Verdict::Continue
            }
            Ok(Asked::No(resp)) => Verdict::Answer(resp, Reason::Unauthorized),
            Ok(Asked::Unavailable(why)) => self.unavailable(&why),
            Err(_) => self.unavailable(&format!(
                "no answer within the forward_auth timeout ({:?})",
                self.timeout
            )),
        }
    }
}

/// Appends the copied fields (their names were removed from the request before).
fn copy(h: &mut HeaderMap, copied: &[(HeaderName, HeaderValue)]) {
    for (n, v) in copied {
        h.append(n.clone(), v.clone());
    }
}

async fn bounded(mut body: ProxyBody) -> Result<Bytes, String> {
    let mut buf = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("reading the answer's body: {e}"))?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > MAX_BODY {
                return Err(format!(
                    "the answer's body is larger than {} KiB",
                    MAX_BODY >> 10
                ));
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf.freeze())
}

impl Cache {
    fn key_of(&self, h: &HeaderMap) -> [u8; 32] {
        let mut d = Sha256::new();
        for n in &self.key {
            // Lengths keep `a` + `bc` apart from `ab` + `c`.
            for v in h.get_all(n) {
                d.update((v.len() as u64).to_le_bytes());
                d.update(v.as_bytes());
            }
            d.update(u64::MAX.to_le_bytes());
        }
        d.finalize().into()
    }

    fn get(&self, key: &[u8; 32]) -> Option<Copied> {
        let answers = self.answers.lock().unwrap();
        let (until, copied) = answers.get(key)?;
        (*until > Instant::now()).then(|| copied.clone())
    }

    fn put(&self, key: [u8; 32], copied: Copied) {
        let now = Instant::now();
        let mut answers = self.answers.lock().unwrap();
        if answers.len() >= CACHE_MAX {
            answers.retain(|_, (until, _)| *until > now);
            if answers.len() >= CACHE_MAX {
                answers.clear();
            }
        }
        answers.insert(key, (now + self.ttl, copied));
    }
}
