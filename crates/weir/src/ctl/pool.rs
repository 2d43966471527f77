//! `weir ctl pool ...`: pools and their endpoints.

use clap::Subcommand;
use serde_json::{json, Map, Value};

use super::client::{ApiError, Client};
use super::error::CtlError;
use super::paths::{endpoint_path, path};
use super::resource::{create, delete, report_delete};
use weir_store::Kind;

#[derive(Debug, Subcommand)]
pub enum PoolCommand {
    /// Create a pool and its endpoints, all or nothing (one transaction).
    ///
    /// Fails if the pool or any of its endpoints exists. Options left out take the
    /// defaults of docs/CONFIG.md.
    Create {
        name: String,
        /// An endpoint, IP:PORT or HOST:PORT (every address the name resolves to) with an
        /// optional :WEIGHT (`10.0.0.1:80:5`, `[::1]:80`, `api.internal:8080`), or an SRV
        /// name (`_http._tcp.api.internal`); repeat for more.
        #[arg(long = "endpoint", value_name = "ADDR[:WEIGHT]", value_parser = parse_endpoint)]
        endpoints: Vec<(String, Option<u32>)>,
        /// round_robin | least_conn | random | p2c | ewma | hash | sticky
        #[arg(long)]
        balance: Option<String>,
        /// Requests (or TCP sessions) in flight per endpoint; 0 = no limit.
        #[arg(long, value_name = "N")]
        max_conn: Option<u64>,
        /// What weir speaks to the endpoints: http1 | h2c | h2 (h2 needs the pool's tls).
        #[arg(long, value_name = "P")]
        protocol: Option<String>,
        /// Active health check: tcp | http | grpc | none.
        #[arg(long, value_name = "CHECK")]
        health: Option<String>,
        /// Health check interval (`1s`).
        #[arg(long, value_name = "D")]
        interval: Option<String>,
        /// Health check timeout (`500ms`).
        #[arg(long, value_name = "D")]
        timeout: Option<String>,
        /// Health check path, for http checks.
        #[arg(long, value_name = "P")]
        path: Option<String>,
    },
    /// Add an endpoint to a pool; fails if it is already there.
    AddEndpoint {
        pool: String,
        /// IP:PORT, HOST:PORT or an SRV name
        #[arg(value_parser = parse_target)]
        addr: String,
        #[arg(long, value_name = "N")]
        weight: Option<u32>,
    },
    /// Remove an endpoint from a pool; in-flight requests to it finish (it drains).
    ///
    /// An endpoint that is not there (anymore) is reported on stderr and the exit status
    /// is 0: the wanted state holds, so scripts can repeat this safely.
    RemoveEndpoint {
        pool: String,
        /// IP:PORT, HOST:PORT or an SRV name
        #[arg(value_parser = parse_target)]
        addr: String,
    },
    /// Delete a pool and its endpoints.
    ///
    /// A pool that does not exist is reported on stderr and the exit status is 0.
    Delete { name: String },
}

pub fn run(client: &Client, cmd: PoolCommand) -> Result<(), CtlError> {
    match cmd {
        PoolCommand::Create {
            name,
            endpoints,
            balance,
            max_conn,
            protocol,
            health,
            interval,
            timeout,
            path: health_path,
        } => {
            let mut spec = Map::new();
            if let Some(b) = balance {
                spec.insert("balance".into(), json!(b));
            }
            if let Some(n) = max_conn {
                spec.insert("max_conn".into(), json!(n));
            }
            if let Some(p) = protocol {
                spec.insert("protocol".into(), json!(p));
            }
            let mut h = Map::new();
            for (k, v) in [
                ("check", health),
                ("interval", interval),
                ("timeout", timeout),
                ("path", health_path),
            ] {
                if let Some(v) = v {
                    h.insert(k.into(), json!(v));
                }
            }
            if !h.is_empty() {
                spec.insert("health".into(), Value::Object(h));
            }
            let changes = create_changes(&name, Value::Object(spec), &endpoints);
            let r = match client.transaction(changes) {
                Ok(r) => r,
                Err(ApiError::Problem(p)) if p.status == 412 => {
                    let what = match p.change.and_then(|i| i.checked_sub(1)) {
                        Some(i) if i < endpoints.len() => {
                            format!("endpoint {} of pool `{name}`", endpoints[i].0)
                        }
                        _ => format!("pool `{name}`"),
                    };
                    return Err(CtlError::Exists(what));
                }
                Err(e) => return Err(e.into()),
            };
            let n = endpoints.len();
            println!(
                "pool {name} created with {n} endpoint{} (revision {})",
                if n == 1 { "" } else { "s" },
                r.revision
            );
        }
        PoolCommand::AddEndpoint { pool, addr, weight } => {
            let addr = addr.to_string();
            let spec = endpoint_spec(weight);
            let v = create(
                client,
                &endpoint_path(&pool, &addr),
                &spec,
                &format!("endpoint {addr} of pool `{pool}`"),
            )?;
            println!("endpoint {addr} added to pool {pool} (version {v})");
        }
        PoolCommand::RemoveEndpoint { pool, addr } => {
            let d = delete(client, &endpoint_path(&pool, &addr))?;
            report_delete(&format!("endpoint {addr} of pool {pool}"), d);
        }
        PoolCommand::Delete { name } => {
            let d = delete(client, &path(Kind::Pool, &name))?;
            report_delete(&format!("pool {name}"), d);
        }
    }
    Ok(())
}

/// The transaction that adds a pool and its endpoints: the pool first, so each endpoint's
/// precondition is checked against a state where its pool exists.
fn create_changes(name: &str, spec: Value, endpoints: &[(String, Option<u32>)]) -> Vec<Value> {
    let mut changes = vec![json!({
        "op": "put", "path": path(Kind::Pool, name), "if_none_match": "*", "spec": spec,
    })];
    for (addr, weight) in endpoints {
        changes.push(json!({
            "op": "put", "path": endpoint_path(name, addr), "if_none_match": "*",
            "spec": endpoint_spec(*weight),
        }));
    }
    changes
}

/// Without --weight the spec leaves the weight out, so it takes the config's default.
fn endpoint_spec(weight: Option<u32>) -> Value {
    match weight {
        Some(w) => json!({ "weight": w }),
        None => json!({}),
    }
}

/// An endpoint's address as the API names it: `IP:PORT`, `HOST:PORT` or an SRV name, spelled
/// canonically so it names the same resource as the config file's spelling would.
fn parse_target(s: &str) -> Result<String, String> {
    weir_config::endpoint_target(s)
}

/// An endpoint ([`parse_target`]) with an optional `:WEIGHT`; IPv6 in brackets.
fn parse_endpoint(s: &str) -> Result<(String, Option<u32>), String> {
    if let Ok(a) = weir_config::endpoint_target(s) {
        return Ok((a, None));
    }
    let bad =
        || format!("`{s}` is not IP:PORT, HOST:PORT or an SRV name, with an optional :WEIGHT");
    let (addr, weight) = s.rsplit_once(':').ok_or_else(bad)?;
    let addr = weir_config::endpoint_target(addr).map_err(|_| bad())?;
    let weight = weight
        .parse::<u32>()
        .map_err(|_| format!("`{weight}` in `{s}` is not a weight (a positive integer)"))?;
    Ok((addr, Some(weight)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_arguments() {
        assert_eq!(
            parse_endpoint("10.0.0.1:80").unwrap(),
            ("10.0.0.1:80".into(), None)
        );
        assert_eq!(
            parse_endpoint("10.0.0.1:80:5").unwrap(),
            ("10.0.0.1:80".into(), Some(5))
        );
        assert_eq!(
            parse_endpoint("[0:0::1]:80:2").unwrap(),
            ("[::1]:80".into(), Some(2))
        );
        assert!(parse_endpoint("10.0.0.1").is_err());
        assert!(parse_endpoint("10.0.0.1:80:x").is_err());
        assert_eq!(
            parse_endpoint("api.internal:80:4").unwrap(),
            ("api.internal:80".into(), Some(4))
        );
        assert_eq!(
            parse_endpoint("_http._tcp.api.internal").unwrap(),
            ("_http._tcp.api.internal".into(), None)
        );
        assert!(parse_endpoint("a b:80").is_err());
    }

    #[test]
    fn create_is_one_transaction_pool_first() {
        let c = create_changes(
            "app",
            json!({"balance": "p2c"}),
            &[("[::1]:80".into(), Some(3)), ("10.0.0.1:80".into(), None)],
        );
        assert_eq!(
            c,
            vec![
                json!({"op": "put", "path": "pools/app", "if_none_match": "*", "spec": {"balance": "p2c"}}),
                json!({"op": "put", "path": "pools/app/endpoints/[::1]:80", "if_none_match": "*", "spec": {"weight": 3}}),
                json!({"op": "put", "path": "pools/app/endpoints/10.0.0.1:80", "if_none_match": "*", "spec": {}}),
            ]
        );
    }
}
