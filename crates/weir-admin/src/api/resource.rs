//! One resource: GET, HEAD, PUT, DELETE with the repository semantics of docs/DESIGN.md §3, and
//! lists of a kind. A certificate is shown without its private key (`key_pem`), in reads and
//! in a PUT's answer alike (`weir_control::secret`).

use bytes::Bytes;
use http::{header, Method, Response, StatusCode};
use http_body_util::Full;
use serde_json::{json, Value};
use weir_control::secret::shown;
use weir_control::RunningConfig;
use weir_store::{Change, Kind, Precondition};

use super::path;
use super::precond::{etag, Pre};
use super::problem::{refused, Problem};
use super::reply::{json_response, Reply};

pub fn get(control: &RunningConfig, kind: Kind, name: &str, pre: Pre) -> Reply {
    let state = control.state();
    let Some(v) = state.get(kind, name) else {
        return Err(Problem::not_found(format!(
            "{} does not exist",
            path::of(kind, name)
        )));
    };
    let unchanged = match &pre {
        Pre::NotVersion(tags) => tags.contains(&v.version),
        Pre::Absent => true,
        _ => false,
    };
    let mut r = if unchanged {
        let mut r = Response::new(Full::new(Bytes::new()));
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        json_response(StatusCode::OK, &shown(kind, &v.body))
    };
    r.headers_mut().insert(header::ETAG, etag(v.version));
    if let Some(h) = control.held().get(&(kind, name.to_owned())) {
        r.headers_mut()
            .insert(INVALID, invalid_header(&h.why.to_string()));
    }
    Ok(r)
}

/// On a read of a stored resource that does not validate (held back, `weir_control::held`):
/// why, as its problems read (`field: message; ...`).
const INVALID: &str = "x-weir-invalid";

/// `text` as a header value: visible ASCII, anything else as `?`.
fn invalid_header(text: &str) -> header::HeaderValue {
    let ascii: String = text
        .chars()
        .map(|c| {
            if c == ' ' || c.is_ascii_graphic() {
                c
            } else {
                '?'
            }
        })
        .collect();
    header::HeaderValue::from_str(&ascii).unwrap_or(header::HeaderValue::from_static("invalid"))
}

pub fn list(control: &RunningConfig, kind: Kind, pool: Option<&str>) -> Reply {
    let state = control.state();
    let held = control.held();
    // A held resource (stored, not validating) carries its problems.
    let item = |kind: Kind, key: String, name: &str, v: &weir_store::Versioned| {
        let mut item = json!({"name": name, "version": v.version, "spec": shown(kind, &v.body)});
        if let Some(h) = held.get(&(kind, key)) {
            item["invalid"] = json!(h.why.0);
        }
        item
    };
    let items: Vec<Value> = match pool {
        Some(p) => {
            if state.get(Kind::Pool, p).is_none() {
                return Err(Problem::not_found(format!("pools/{p} does not exist")));
            }
            state
                .endpoints_of(p)
                .map(|(addr, v)| item(Kind::Endpoint, weir_store::endpoint_name(p, addr), addr, v))
                .collect()
        }
        None => state
            .of_kind(kind)
            .map(|(n, v)| item(kind, n.to_owned(), n, v))
            .collect(),
    };
    Ok(json_response(
        StatusCode::OK,
        &json!({"revision": state.revision, "items": items}),
    ))
}

pub async fn put(control: &RunningConfig, kind: Kind, name: &str, pre: Pre, spec: Value) -> Reply {
    check_spec(kind, name, &spec)?;
    let precondition = match pre {
        Pre::Absent => Precondition::Absent,
        Pre::Version(tags) => Precondition::Version(named(control, kind, name, &tags)?),
        Pre::NotVersion(_) => {
            return Err(Problem::bad_request(
                "a PUT takes If-None-Match: * (add) or If-Match: \"N\" (update)",
            ))
        }
        Pre::None if kind == Kind::Endpoint && spec.get("ttl").is_some() => {
            return register(control, name, spec).await;
        }
        Pre::None => {
            return Err(Problem::precondition_required(
                "send If-None-Match: * to add, or If-Match: \"<version>\" (the ETag you read) to update",
            ))
        }
    };
    if kind == Kind::Endpoint {
        pool_exists(control, name)?;
    }
    let added = precondition == Precondition::Absent;
    let change = Change::Put {
        kind,
        name: name.to_owned(),
        body: spec.clone(),
        pre: precondition,
    };
    let done = control
        .commit(vec![change])
        .await
        .map_err(|e| refused(e, true))?;
    Ok(written(kind, name, added, done[0].version, &spec))
}

pub async fn delete(control: &RunningConfig, kind: Kind, name: &str, pre: Pre) -> Reply {
    let version = match pre {
        Pre::Version(tags) => named(control, kind, name, &tags)?,
        _ => {
            return Err(Problem::precondition_required(
                "send If-Match: \"<version>\" (the ETag you read) to delete",
            ))
        }
    };
    let mut changes = vec![Change::Delete {
        kind,
        name: name.to_owned(),
        pre: Precondition::Version(version),
    }];
    if kind == Kind::Pool {
        changes.extend(endpoints_of(control, name, &[]));
    }
    control
        .commit(changes)
        .await
        .map_err(|e| refused(e, true))?;
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = StatusCode::NO_CONTENT;
    Ok(r)
}

/// Deletes of a pool's endpoints, so that deleting a pool takes them with it; `except` are
/// those a transaction already changes.
pub fn endpoints_of(control: &RunningConfig, pool: &str, except: &[String]) -> Vec<Change> {
    control
        .state()
        .endpoints_of(pool)
        .map(|(addr, v)| (weir_store::endpoint_name(pool, addr), v.version))
        .filter(|(n, _)| !except.contains(n))
        .map(|(name, v)| Change::Delete {
            kind: Kind::Endpoint,
            name,
            pre: Precondition::Version(v),
        })
        .collect()
}

/// A registration: a PUT with a lease and no precondition adds the endpoint or renews it.
async fn register(control: &RunningConfig, name: &str, spec: Value) -> Reply {
    pool_exists(control, name)?;
    if let Some(e) = control.file_defined(Kind::Endpoint, name) {
        return Err(refused(e, true));
    }
    // The read and the commit are apart, so another writer can slip in; try again then.
    for _ in 0..3 {
        let current = control.state().get(Kind::Endpoint, name).cloned();
        let pre = match &current {
            None => Precondition::Absent,
            Some(v) if v.body.get("ttl").is_none() => return Err(Problem::precondition_required(
                "this endpoint was added without a lease; change it with If-Match: \"<version>\"",
            )),
            Some(v) if *v.body == spec => {
                control.heartbeat(name).await.ok();
                return Ok(written(Kind::Endpoint, name, false, v.version, &spec));
            }
            Some(v) => Precondition::Version(v.version),
        };
        let change = Change::Put {
            kind: Kind::Endpoint,
            name: name.to_owned(),
            body: spec.clone(),
            pre,
        };
        match control.commit(vec![change]).await {
            Ok(done) => {
                let added = pre == Precondition::Absent;
                return Ok(written(Kind::Endpoint, name, added, done[0].version, &spec));
            }
            Err(
                weir_control::Refused::Stale { .. }
                | weir_control::Refused::AlreadyExists { .. }
                | weir_control::Refused::NotFound { .. },
            ) => continue,
            Err(e) => return Err(refused(e, true)),
        }
    }
    Err(Problem::new(
        StatusCode::CONFLICT,
        "busy",
        "the endpoint keeps changing",
        "the endpoint was changed by others three times while registering; try again",
    ))
}

pub async fn heartbeat(control: &RunningConfig, name: &str) -> Reply {
    match control.heartbeat(name).await {
        Ok(_) => {
            let ttl = control
                .state()
                .get(Kind::Endpoint, name)
                .and_then(|v| v.body.get("ttl").cloned())
                .unwrap_or(Value::Null);
            Ok(json_response(StatusCode::OK, &json!({"ttl": ttl})))
        }
        Err(weir_control::HeartbeatError::NotFound) => Err(Problem::not_found(format!(
            "{} does not exist; register it again with PUT",
            path::of(Kind::Endpoint, name)
        ))),
        Err(e @ weir_control::HeartbeatError::NoLease) => Err(Problem::new(
            StatusCode::CONFLICT,
            "no-lease",
            "the endpoint has no lease",
            e.to_string(),
        )),
        Err(weir_control::HeartbeatError::Unavailable(why)) => Err(Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "store-unreachable",
            "the config store is unreachable; the lease was not renewed",
            why,
        )),
    }
}

/// Checks a spec's shape before it reaches validation: endpoints are not part of a pool's
/// spec, and nothing is named twice.
pub fn check_spec(kind: Kind, name: &str, spec: &Value) -> Result<(), Problem> {
    let Some(obj) = spec.as_object() else {
        return Err(Problem::bad_request(
            "the body must be a JSON object (the resource's spec)",
        ));
    };
    let field = |k: &str| format!("{}/{k}", path::of(kind, name));
    if kind == Kind::Pool && obj.contains_key("endpoints") {
        return Err(Problem::invalid(
            field("endpoints"),
            format!(
                "endpoints are resources of their own: PUT /api/v1/pools/{name}/endpoints/ADDR"
            ),
        ));
    }
    if kind == Kind::Endpoint && obj.contains_key("addr") {
        return Err(Problem::invalid(
            field("addr"),
            "the address is the last part of the path, not a key of the spec".into(),
        ));
    }
    Ok(())
}

fn pool_exists(control: &RunningConfig, endpoint: &str) -> Result<(), Problem> {
    let pool = endpoint.split('/').next().unwrap_or_default();
    if control.state().get(Kind::Pool, pool).is_none() {
        return Err(Problem::not_found(format!("pools/{pool} does not exist")));
    }
    Ok(())
}

/// The version an `If-Match` list stands for: the current one if the list names it, else
/// the one version named (so the store reports it stale or absent), else none can match.
fn named(control: &RunningConfig, kind: Kind, name: &str, tags: &[u64]) -> Result<u64, Problem> {
    let current = control.state().get(kind, name).map(|v| v.version);
    match (current, tags) {
        (Some(c), _) if tags.contains(&c) => Ok(c),
        (_, [one]) => Ok(*one),
        _ => Err(stale_tag(control, kind, name)),
    }
}

/// A tag that is not one of ours can never be current.
fn stale_tag(control: &RunningConfig, kind: Kind, name: &str) -> Problem {
    match control.state().get(kind, name) {
        Some(v) => Problem::precondition_failed(
            format!("If-Match does not name the current version, {}", v.version),
            Some(v.version),
        ),
        None => Problem::not_found(format!("{} does not exist", path::of(kind, name))),
    }
}

fn written(
    kind: Kind,
    name: &str,
    added: bool,
    version: u64,
    spec: &Value,
) -> Response<Full<Bytes>> {
    let status = if added {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let mut r = json_response(status, &shown(kind, spec));
    r.headers_mut().insert(header::ETAG, etag(version));
    if added {
        if let Ok(v) = format!("/api/v1/{}", path::of(kind, name)).parse() {
            r.headers_mut().insert(header::LOCATION, v);
        }
    }
    r
}

/// Which methods a single resource answers.
pub const ALLOW: &str = "GET, HEAD, PUT, DELETE";

pub fn allowed(m: &Method) -> bool {
    matches!(
        *m,
        Method::GET | Method::HEAD | Method::PUT | Method::DELETE
    )
}
