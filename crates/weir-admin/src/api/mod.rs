//! The configuration API under `/api/v1` (docs/DESIGN.md §3, docs/API.md).

mod auth;
pub(crate) mod browser;
mod json;
mod openapi_kinds;
mod path;
mod precond;
mod problem;
mod reply;
mod resource;
mod throttle;
mod transaction;

use std::net::IpAddr;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use weir_control::RunningConfig;
use weir_proxy::Proxy;

pub use auth::{Auth, TokenError};
pub use problem::Problem;
pub use reply::{json_response, Reply};
pub use throttle::FLUSH_EVERY;

use path::Target;
use reply::text;

/// Request bodies above this are refused (413): a whole config is far smaller.
const MAX_BODY: usize = 1 << 20;

const OPENAPI: &str = include_str!("openapi.json");

pub async fn handle(
    control: &RunningConfig,
    proxy: &Proxy,
    auth: &Auth,
    rest: &str,
    req: Request<Incoming>,
    peer: IpAddr,
) -> Response<Full<Bytes>> {
    let read = matches!(*req.method(), Method::GET | Method::HEAD);
    let mut resp = match dispatch(control, proxy, auth, rest, req, peer).await {
        Ok(r) => r,
        Err(p) => p.into_response(),
    };
    // A read answered from this replica's copy while the shared store is away: it may
    // miss what other replicas committed since.
    if read && resp.status().is_success() && control.store_problem().is_some() {
        resp.headers_mut()
            .insert(STALE, HeaderValue::from_static("store-unreachable"));
    }
    resp
}

/// On reads answered while the config store is unreachable.
const STALE: &str = "x-weir-stale";

// HEAD answers carry the GET answer's headers; hyper leaves the body out.
async fn dispatch(
    control: &RunningConfig,
    proxy: &Proxy,
    auth: &Auth,
    rest: &str,
    req: Request<Incoming>,
    peer: IpAddr,
) -> Reply {
    let target = path::parse(rest)?;
    let query = req.uri().query().map(str::to_owned);
    let (parts, incoming) = req.into_parts();
    let method = parts.method;
    let write = !matches!(method, Method::GET | Method::HEAD);
    auth.check(&parts.headers, write, peer)?;
    // A write's body is read here, whatever the method, so that every body the API takes
    // is labelled JSON; an empty one need not be (it may even come chunked: ureq, and so
    // older `weir ctl` heartbeats, send a bodiless POST that way).
    let content = if write {
        let bytes = read_body(incoming).await?;
        if !bytes.is_empty() {
            browser::require_json(&parts.headers)?;
        }
        bytes
    } else {
        Bytes::new()
    };
    let pre = precond::parse(&parts.headers)?;
    let read_only = |allow| {
        if method == Method::GET || method == Method::HEAD {
            Ok(())
        } else {
            Err(Problem::method_not_allowed(allow))
        }
    };
    match target {
        Target::One(kind, name) => {
            if !resource::allowed(&method) {
                return Err(Problem::method_not_allowed(resource::ALLOW));
            }
            match method {
                Method::PUT => {
                    let spec = json::parse(&content)?;
                    resource::put(control, kind, &name, pre, spec).await
                }
                Method::DELETE => resource::delete(control, kind, &name, pre).await,
                _ => resource::get(control, kind, &name, pre),
            }
        }
        Target::List(kind, pool) => {
            read_only("GET, HEAD")?;
            resource::list(control, kind, pool.as_deref())
        }
        Target::Heartbeat(name) => {
            if method != Method::POST {
                return Err(Problem::method_not_allowed("POST"));
            }
            resource::heartbeat(control, &name).await
        }
        Target::Transaction => {
            if method != Method::POST {
                return Err(Problem::method_not_allowed("POST"));
            }
            transaction::run(control, json::parse(&content)?).await
        }
        Target::Config => {
            read_only("GET, HEAD")?;
            Ok(json_response(StatusCode::OK, &control.source_info()))
        }
        Target::Export => {
            read_only("GET, HEAD")?;
            Ok(text(StatusCode::OK, "application/toml", control.export()))
        }
        Target::OpenApi => {
            read_only("GET, HEAD")?;
            Ok(text(StatusCode::OK, "application/json", OPENAPI))
        }
        Target::Stats => {
            read_only("GET, HEAD")?;
            // The data plane's figures, and where its config comes from (the dashboard warns
            // while a shared store is away, and lists stored resources held back).
            let mut stats = serde_json::to_value(proxy.stats()).unwrap_or_default();
            let info = control.source_info();
            stats["config_source"] = serde_json::json!({
                "mode": info.mode,
                "source": info.source,
                "problem": control.store_problem(),
                "invalid": info.invalid,
            });
            Ok(json_response(StatusCode::OK, &stats))
        }
        Target::StatsHistory => {
            read_only("GET, HEAD")?;
            let from = history_from(query.as_deref())?;
            Ok(json_response(StatusCode::OK, &proxy.stats_history(from)))
        }
    }
}

/// `?from=N` of `stats/history`: the first sample wanted (a `next` it answered before);
/// 0, all of them, without it. Other parameters are ignored.
fn history_from(query: Option<&str>) -> Result<u64, Problem> {
    let from = query
        .unwrap_or("")
        .split('&')
        .find_map(|p| p.strip_prefix("from="));
    let Some(v) = from else {
        return Ok(0);
    };
    v.parse().map_err(|_| {
        Problem::bad_request(format!(
            "from must be a sample number (the `next` of an earlier answer), not {v:?}"
        ))
        .with_field("from".into())
    })
}

/// Reads a request body, at most [`MAX_BODY`] bytes.
async fn read_body(body: Incoming) -> Result<Bytes, Problem> {
    match Limited::new(body, MAX_BODY).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(Problem::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body-too-large",
            "the request body is too large",
            format!("at most {MAX_BODY} bytes"),
        )),
        Err(e) => Err(Problem::bad_request(format!("reading the body: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_from_reads_its_parameter() {
        assert_eq!(history_from(None).unwrap(), 0);
        assert_eq!(history_from(Some("x=1&from=42")).unwrap(), 42);
        let p = history_from(Some("from=soon")).unwrap_err();
        assert_eq!(p.field(), Some("from"));
        assert!(history_from(Some("from=-1")).is_err());
    }
}
