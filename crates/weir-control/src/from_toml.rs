//! A config file's tables as API resources: what file mode shows through the API, and what
//! `weir ctl apply -f` sends. Each resource keeps exactly the keys the file wrote (defaults
//! stay implicit), so a round trip through the API and `export` does not grow the config.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use serde_json::{Map, Value};
use weir_store::{endpoint_name, Kind};

/// Resource specs by (kind, name); endpoints are named `POOL/ADDR`.
pub type Specs = BTreeMap<(Kind, String), Value>;

/// Why a file could not be turned into resources. Callers validate the file with
/// `weir_config::parse_str` first, which reports problems at their line and column; these are
/// only the structural ones that make a conversion impossible.
#[derive(Debug, thiserror::Error)]
pub enum FromTomlError {
    #[error("not valid TOML: {0}")]
    Syntax(#[from] toml::de::Error),
    #[error("`{0}` must be a table")]
    NotATable(String),
    #[error("pools.{pool}.endpoints: {reason}")]
    Endpoint { pool: String, reason: String },
}

/// The listeners, routes, pools, endpoints, certificates and filters of `source`. `[admin]` and `[global]` are
/// process settings, not resources, and are left out.
pub fn specs(source: &str) -> Result<Specs, FromTomlError> {
    let doc: toml::Table = source.parse()?;
    let mut out = Specs::new();
    for (section, kind) in [
        ("listeners", Kind::Listener),
        ("routes", Kind::Route),
        ("pools", Kind::Pool),
        ("certificates", Kind::Certificate),
        ("filters", Kind::Filter),
    ] {
        let Some(tables) = doc.get(section) else {
            continue;
        };
        let tables = tables
            .as_table()
            .ok_or_else(|| FromTomlError::NotATable(section.to_owned()))?;
        for (name, table) in tables {
            let Value::Object(mut spec) = to_json(table) else {
                return Err(FromTomlError::NotATable(format!("{section}.{name}")));
            };
            if kind == Kind::Pool {
                if let Some(eps) = spec.remove("endpoints") {
                    endpoints(name, eps, &mut out)?;
                }
            }
            out.insert((kind, name.clone()), Value::Object(spec));
        }
    }
    Ok(out)
}

/// Splits a pool's `endpoints` array into one resource per endpoint.
fn endpoints(pool: &str, eps: Value, out: &mut Specs) -> Result<(), FromTomlError> {
    let err = |reason: String| FromTomlError::Endpoint {
        pool: pool.to_owned(),
        reason,
    };
    let Value::Array(items) = eps else {
        return Err(err("must be an array of tables".into()));
    };
    for item in items {
        let Value::Object(mut ep) = item else {
            return Err(err("each endpoint must be a table".into()));
        };
        // An SRV entry is named by its SRV name, which has no port.
        let addr = match (ep.remove("addr"), ep.remove("srv")) {
            (Some(Value::String(a)), None) => canonical_addr(&a),
            (None, Some(Value::String(srv))) => srv,
            _ => return Err(err("an endpoint without `addr` (or `srv`)".into())),
        };
        out.insert(
            (Kind::Endpoint, endpoint_name(pool, &addr)),
            Value::Object(ep),
        );
    }
    Ok(())
}

/// The one spelling of an endpoint address used in resource names (`[::1]:80`, not
/// `[0:0::1]:80`), so the same endpoint cannot exist twice under two names.
pub fn canonical_addr(addr: &str) -> String {
    addr.parse::<SocketAddr>()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| addr.to_owned())
}

fn to_json(v: &toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(f) => Value::from(*f),
        toml::Value::Boolean(b) => Value::Bool(*b),
        // The config has no datetime keys; keep the text so validation can point at it.
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(a) => Value::Array(a.iter().map(to_json).collect()),
        toml::Value::Table(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.clone(), to_json(v)))
                .collect::<Map<_, _>>(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_pools_and_endpoints() {
        let s = specs(
            r#"
[admin]
listen = "127.0.0.1:9901"
[listeners.web]
bind = "127.0.0.1:8080"
pool = "app"
[pools.app]
balance = "least_conn"
endpoints = [{ addr = "127.0.0.1:9001", weight = 3 }, { addr = "[0:0::1]:9002" }]
[pools.app.health]
check = "tcp"
"#,
        )
        .unwrap();
        assert_eq!(s.len(), 4);
        assert_eq!(
            s[&(Kind::Pool, "app".into())],
            serde_json::json!({"balance": "least_conn", "health": {"check": "tcp"}})
        );
        assert_eq!(
            s[&(Kind::Endpoint, "app/127.0.0.1:9001".into())],
            serde_json::json!({"weight": 3})
        );
        assert_eq!(
            s[&(Kind::Endpoint, "app/[::1]:9002".into())],
            serde_json::json!({})
        );
        assert_eq!(
            s[&(Kind::Listener, "web".into())],
            serde_json::json!({"bind": "127.0.0.1:8080", "pool": "app"})
        );
    }
}
