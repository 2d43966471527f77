//! Validation of a change: the structural rules of resources, then the config's own rules on
//! the typed model (weir-config's `Resources`), every problem named by its field.

use std::time::Duration;

use serde_json::Value;
use weir_config::{ResourceChange, ResourceKind, Resources};
use weir_store::{Kind, State};

/// One reason a configuration is invalid, named by resource field (`pools/app/max_queue`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FieldError {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    pub message: String,
}

/// Why a State is not a configuration weir can run. Never empty.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.iter().map(|e| match &e.field {
    Some(f) => format!("{f}: {}", e.message),
    None => e.message.clone(),
}).collect::<Vec<_>>().join("; "))]
pub struct Invalid(pub Vec<FieldError>);

/// A lease shorter than this would need heartbeats faster than a busy service can promise;
/// a longer one would keep a dead endpoint for too long.
pub const TTL_RANGE: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(3600));

/// The structural checks only resources need, for the resources `touched` names: an
/// endpoint's pool must exist (also when the pool is what was deleted), a lease's ttl must
/// parse. The rest is the config's own rules ([`check`]).
pub fn structural(state: &State, touched: &[(Kind, String)]) -> Result<(), Invalid> {
    let mut errors = Vec::new();
    let mut endpoint = |name: &str, v: &weir_store::Versioned| {
        let (pool, addr) = name.split_once('/').unwrap_or((name, ""));
        let field = format!("pools/{pool}/endpoints/{addr}");
        if state.get(Kind::Pool, pool).is_none() {
            errors.push(FieldError {
                field: Some(field.clone()),
                message: format!("pool `{pool}` does not exist"),
            });
        }
        if let Some(ttl) = v.body.get("ttl") {
            if let Err(message) = ttl_of(ttl) {
                errors.push(FieldError {
                    field: Some(format!("{field}/ttl")),
                    message,
                });
            }
        }
    };
    for (kind, name) in touched {
        match kind {
            Kind::Endpoint => {
                if let Some(v) = state.get(Kind::Endpoint, name) {
                    endpoint(name, v);
                }
            }
            // A deleted pool must take its endpoints with it.
            Kind::Pool if state.get(Kind::Pool, name).is_none() => {
                let from = (Kind::Endpoint, format!("{name}/"));
                let to = (Kind::Endpoint, format!("{name}0"));
                for ((_, n), v) in state.resources.range(from..to) {
                    endpoint(n, v);
                }
            }
            _ => {}
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Invalid(errors))
    }
}

/// Checks `touched` of `state` against the typed model, which takes them on if valid.
pub fn check(
    model: &mut Resources,
    state: &State,
    touched: &[(Kind, String)],
) -> Result<(), Invalid> {
    structural(state, touched)?;
    // In the order a file lists them (listeners, routes, pools; by name), so problems in
    // several resources come in the order the API always gave them.
    let mut keys: Vec<&(Kind, String)> = touched.iter().collect();
    keys.sort();
    keys.dedup();
    let changes: Vec<ResourceChange<'_>> = keys
        .into_iter()
        .map(|(kind, name)| ResourceChange {
            kind: kind_of(*kind),
            name,
            spec: state.get(*kind, name).map(|v| &*v.body),
        })
        .collect();
    model.apply(&changes).map_err(|problems| {
        Invalid(
            problems
                .into_iter()
                .map(|p| FieldError {
                    field: p.field,
                    message: p.message,
                })
                .collect(),
        )
    })
}

/// A model holding every resource of `state`, with the settings of `preamble`.
pub fn model(state: &State, preamble: &str) -> Result<Resources, Invalid> {
    let (admin, global) = settings(preamble);
    model_with(state, admin, global)
}

/// A model holding every resource of `state`, with these settings.
pub fn model_with(
    state: &State,
    admin: weir_config::Admin,
    global: weir_config::Global,
) -> Result<Resources, Invalid> {
    let mut model = Resources::new(admin, global);
    let all: Vec<(Kind, String)> = state.resources.keys().cloned().collect();
    // What is stored was valid when written: a certificate that expired since is served on
    // with a warning rather than keep weir from starting. Changes are held to the dates.
    model.tolerate_expired(true);
    check(&mut model, state, &all)?;
    model.tolerate_expired(false);
    Ok(model)
}

/// `[admin]` and `[global]` from their TOML (already validated: a file's, or the store's
/// made from the command line).
pub fn settings(preamble: &str) -> (weir_config::Admin, weir_config::Global) {
    match weir_config::parse_str(preamble, "<settings>") {
        Ok(l) => (l.config.admin, l.config.global),
        Err(_) => Default::default(),
    }
}

fn kind_of(k: Kind) -> ResourceKind {
    match k {
        Kind::Listener => ResourceKind::Listener,
        Kind::Route => ResourceKind::Route,
        Kind::Pool => ResourceKind::Pool,
        Kind::Endpoint => ResourceKind::Endpoint,
        Kind::Certificate => ResourceKind::Certificate,
        Kind::Filter => ResourceKind::Filter,
    }
}

/// A lease's ttl: a duration string within [`TTL_RANGE`].
pub fn ttl_of(v: &Value) -> Result<Duration, String> {
    let s = v
        .as_str()
        .ok_or_else(|| format!("ttl must be a duration string like \"10s\", found {v}"))?;
    let d = weir_config::parse_duration(s)?;
    if d < TTL_RANGE.0 || d > TTL_RANGE.1 {
        return Err(format!("ttl {s} is out of range (1s to 1h)"));
    }
    Ok(d)
}
