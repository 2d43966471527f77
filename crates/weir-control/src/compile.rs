//! A whole State to a validated Config, or every problem with the field it is about.

use std::time::Duration;

use serde_json::Value;
use weir_config::Config;
use weir_store::{Kind, State};

use crate::render::render;

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

/// Validates `state` as weir check would, after the structural checks that only resources
/// need (an endpoint's pool must exist, a lease's ttl must parse).
pub fn compile(state: &State, preamble: &str) -> Result<Config, Invalid> {
    let mut errors = Vec::new();
    for (name, v) in state.of_kind(Kind::Endpoint) {
        let (pool, _) = name.split_once('/').unwrap_or((name, ""));
        let field = format!("pools/{}/endpoints/{}", pool, &name[pool.len() + 1..]);
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
    }
    if !errors.is_empty() {
        return Err(Invalid(errors));
    }
    let rendered = render(state, preamble);
    match weir_config::parse_str(&rendered.text, "<api>") {
        Ok(loaded) => Ok(loaded.config),
        Err(diags) => {
            let mut errors: Vec<FieldError> = diags
                .errors()
                .map(|d| FieldError {
                    field: rendered.field_at(d.line, d.col).map(str::to_owned),
                    message: d.message.clone(),
                })
                .collect();
            // Only the first ones are kept; say that there were more.
            if diags.omitted.errors > 0 {
                let more = weir_config::Omitted {
                    errors: diags.omitted.errors,
                    warnings: 0,
                };
                errors.push(FieldError {
                    field: None,
                    message: more.to_string(),
                });
            }
            Err(Invalid(errors))
        }
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
