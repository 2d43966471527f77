//! `POST /api/v1/transaction`: several changes, validated together, committed all or nothing
//! (what `weir ctl apply` sends).

use http::StatusCode;
use serde_json::{json, Value};
use weir_control::RunningConfig;
use weir_store::{Change, Kind, Precondition};

use super::path::{self, Target};
use super::problem::{refused, Problem};
use super::reply::{json_response, Reply};
use super::resource::{check_spec, endpoints_of};

/// At most this many changes per transaction: a whole config is far smaller.
const MAX_CHANGES: usize = 10_000;

pub async fn run(control: &RunningConfig, body: Value) -> Reply {
    let Some(items) = body.get("changes").and_then(Value::as_array) else {
        return Err(Problem::bad_request(
            "expected {\"changes\": [{\"op\": \"put\"|\"delete\", \"path\": ..., ...}]}",
        ));
    };
    if items.len() > MAX_CHANGES {
        return Err(Problem::bad_request(format!(
            "at most {MAX_CHANGES} changes per transaction"
        )));
    }
    let mut changes = Vec::with_capacity(items.len());
    let mut paths = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let (change, p) = parse(item).map_err(|p| p.at_change(Some(i)))?;
        changes.push(change);
        paths.push(p);
    }
    // Deleting a pool takes its endpoints with it, as a single DELETE does.
    let named: Vec<String> = changes
        .iter()
        .filter_map(|c| match c {
            Change::Put {
                kind: Kind::Endpoint,
                name,
                ..
            }
            | Change::Delete {
                kind: Kind::Endpoint,
                name,
                ..
            } => Some(name.clone()),
            _ => None,
        })
        .collect();
    let pools: Vec<String> = changes
        .iter()
        .filter_map(|c| match c {
            Change::Delete {
                kind: Kind::Pool,
                name,
                ..
            } => Some(name.clone()),
            _ => None,
        })
        .collect();
    let n = changes.len();
    for pool in pools {
        changes.extend(endpoints_of(control, &pool, &named));
    }
    let done = control
        .commit(changes)
        .await
        .map_err(|e| refused(e, false))?;
    let revision = done
        .first()
        .map_or(control.state().revision, |c| c.revision);
    let results: Vec<Value> = paths
        .iter()
        .zip(&done[..n])
        .map(|(p, c)| {
            if c.version == 0 {
                json!({"path": p})
            } else {
                json!({"path": p, "version": c.version})
            }
        })
        .collect();
    Ok(json_response(
        StatusCode::OK,
        &json!({"revision": revision, "results": results}),
    ))
}

fn parse(item: &Value) -> Result<(Change, String), Problem> {
    let obj = item
        .as_object()
        .ok_or_else(|| Problem::bad_request("each change must be an object"))?;
    let p = obj
        .get("path")
        .and_then(Value::as_str)
        .ok_or_else(|| Problem::bad_request("a change needs a \"path\" like \"pools/app\""))?;
    let (kind, name) = match path::parse(p.trim_start_matches('/').trim_start_matches("api/v1/"))? {
        Target::One(kind, name) => (kind, name),
        _ => {
            return Err(Problem::bad_request(format!(
                "{p:?} is not a resource path"
            )))
        }
    };
    let pre = precondition(obj)?;
    let change = match obj.get("op").and_then(Value::as_str) {
        Some("put") => {
            let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
            check_spec(kind, &name, &spec)?;
            Change::Put {
                kind,
                name: name.clone(),
                body: spec,
                pre,
            }
        }
        Some("delete") if pre == Precondition::Absent => {
            return Err(Problem::bad_request("a delete needs if_match"))
        }
        Some("delete") => Change::Delete {
            kind,
            name: name.clone(),
            pre,
        },
        _ => return Err(Problem::bad_request("\"op\" must be \"put\" or \"delete\"")),
    };
    Ok((change, path::of(kind, &name)))
}

fn precondition(obj: &serde_json::Map<String, Value>) -> Result<Precondition, Problem> {
    match (obj.get("if_match"), obj.get("if_none_match")) {
        (Some(_), Some(_)) => Err(Problem::bad_request(
            "give if_match or if_none_match, not both",
        )),
        (None, Some(Value::String(s))) if s == "*" => Ok(Precondition::Absent),
        (None, Some(_)) => Err(Problem::bad_request("if_none_match can only be \"*\"")),
        (Some(v), None) => {
            let n = match v {
                Value::Number(n) => n.as_u64(),
                Value::String(s) => s.trim_matches('"').parse().ok(),
                _ => None,
            };
            n.map(Precondition::Version)
                .ok_or_else(|| Problem::bad_request("if_match must be a version number"))
        }
        (None, None) => Err(Problem::precondition_required(
            "each change needs if_match (a version) or if_none_match: \"*\"",
        )),
    }
}
