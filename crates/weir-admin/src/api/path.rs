//! What an `/api/v1/...` path names.

use percent_encoding::percent_decode_str;
use weir_store::{endpoint_name, Kind};

use super::problem::Problem;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `listeners`, `routes`, `pools`, `certificates`, or `pools/{pool}/endpoints` (with
    /// the pool).
    List(Kind, Option<String>),
    /// One resource, by its store name (`POOL/ADDR` for endpoints).
    One(Kind, String),
    /// `pools/{pool}/endpoints/{addr}/heartbeat`, by the endpoint's store name.
    Heartbeat(String),
    Transaction,
    Config,
    Export,
    OpenApi,
    Stats,
    /// `stats/history`: the last minutes of per-second samples.
    StatsHistory,
}

/// Parses the part after `/api/v1/`.
pub fn parse(rest: &str) -> Result<Target, Problem> {
    let segs: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
    let unknown = || Problem::not_found(format!("no such API path: /api/v1/{rest}"));
    Ok(match segs.as_slice() {
        ["listeners"] => Target::List(Kind::Listener, None),
        ["routes"] => Target::List(Kind::Route, None),
        ["pools"] => Target::List(Kind::Pool, None),
        ["certificates"] => Target::List(Kind::Certificate, None),
        ["filters"] => Target::List(Kind::Filter, None),
        ["listeners", n] => Target::One(Kind::Listener, name(n)?),
        ["routes", n] => Target::One(Kind::Route, name(n)?),
        ["pools", n] => Target::One(Kind::Pool, name(n)?),
        ["certificates", n] => Target::One(Kind::Certificate, name(n)?),
        ["filters", n] => Target::One(Kind::Filter, name(n)?),
        ["pools", p, "endpoints"] => Target::List(Kind::Endpoint, Some(name(p)?)),
        ["pools", p, "endpoints", a] => Target::One(Kind::Endpoint, endpoint(p, a)?),
        ["pools", p, "endpoints", a, "heartbeat"] => Target::Heartbeat(endpoint(p, a)?),
        ["transaction"] => Target::Transaction,
        ["config"] => Target::Config,
        ["export"] => Target::Export,
        ["openapi.json"] => Target::OpenApi,
        ["stats"] => Target::Stats,
        ["stats", "history"] => Target::StatsHistory,
        _ => return Err(unknown()),
    })
}

/// Resource names: what the config file allows (weir-config rejects anything else), and short.
fn name(raw: &str) -> Result<String, Problem> {
    let n = decode(raw)?;
    let ok = (1..=64).contains(&n.len())
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'));
    if !ok {
        return Err(Problem::bad_request(format!(
            "invalid name {n:?}: use 1 to 64 letters, digits, '_' or '-' (as in the config file)"
        )));
    }
    Ok(n)
}

fn endpoint(pool: &str, addr: &str) -> Result<String, Problem> {
    let pool = name(pool)?;
    let addr = decode(addr)?;
    // IP:PORT, HOST:PORT (every address the name resolves to) or an SRV name.
    let addr = weir_config::endpoint_target(&addr).map_err(|why| {
        Problem::bad_request(format!(
            "{why} (an endpoint is IP:PORT, HOST:PORT or an SRV name, e.g. 10.0.0.1:8080, api.internal:8080)"
        ))
    })?;
    Ok(endpoint_name(&pool, &addr))
}

fn decode(raw: &str) -> Result<String, Problem> {
    percent_decode_str(raw)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| Problem::bad_request("the path is not valid UTF-8"))
}

/// The API path of a resource, without `/api/v1/`.
pub fn of(kind: Kind, name: &str) -> String {
    weir_store::resource_path(kind, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_resource_paths() {
        assert_eq!(parse("pools").unwrap(), Target::List(Kind::Pool, None));
        assert_eq!(
            parse("certificates/shop").unwrap(),
            Target::One(Kind::Certificate, "shop".into())
        );
        assert_eq!(of(Kind::Certificate, "shop"), "certificates/shop");
        assert_eq!(
            parse("pools/app/endpoints/127.0.0.1:80").unwrap(),
            Target::One(Kind::Endpoint, "app/127.0.0.1:80".into())
        );
        assert_eq!(
            parse("pools/app/endpoints/%5B0%3A0%3A%3A1%5D%3A80/heartbeat").unwrap(),
            Target::Heartbeat("app/[::1]:80".into())
        );
        assert!(parse("pools/a b").is_err());
        assert!(parse("pools/app/endpoints/nothost").is_err());
        assert!(parse("nothing").is_err());
        assert_eq!(parse("stats/history").unwrap(), Target::StatsHistory);
        assert_eq!(
            of(Kind::Endpoint, "app/[::1]:80"),
            "pools/app/endpoints/[::1]:80"
        );
    }
}
