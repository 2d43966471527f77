//! `weir ctl get`: lists as an aligned table or as JSON.

use clap::{Args, ValueEnum};
use serde_json::{json, Value};

use super::client::{Client, Item};
use super::error::CtlError;

#[derive(Debug, Args)]
pub struct GetArgs {
    /// What to list.
    pub what: What,
    /// Only this pool's endpoints [default: the endpoints of every pool].
    #[arg(long, value_name = "POOL")]
    pub pool: Option<String>,
    /// Output format. `json` prints `[{"name", "version", "spec"}]` (endpoints add "pool").
    #[arg(short = 'o', long, default_value = "table")]
    pub output: Output,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum What {
    Listeners,
    Routes,
    Pools,
    Endpoints,
    Certificates,
    Filters,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Table,
    Json,
}

/// A listed resource; `pool` only for endpoints.
struct Row {
    pool: Option<String>,
    item: Item,
}

pub fn get(client: &Client, args: GetArgs) -> Result<(), CtlError> {
    if args.pool.is_some() && args.what != What::Endpoints {
        return Err(CtlError::Usage(
            "--pool only applies to `get endpoints`".into(),
        ));
    }
    let rows = match args.what {
        What::Listeners => plain(client, "listeners")?,
        What::Routes => plain(client, "routes")?,
        What::Pools => plain(client, "pools")?,
        What::Certificates => plain(client, "certificates")?,
        What::Filters => plain(client, "filters")?,
        What::Endpoints => endpoints(client, args.pool.as_deref())?,
    };
    let out = match args.output {
        Output::Json => {
            let items: Vec<Value> = rows.iter().map(row_json).collect();
            serde_json::to_string_pretty(&items).expect("JSON values serialize") + "\n"
        }
        Output::Table => render(args.what, &rows),
    };
    print!("{out}");
    Ok(())
}

fn plain(client: &Client, path: &str) -> Result<Vec<Row>, CtlError> {
    Ok(client
        .list(path)?
        .items
        .into_iter()
        .map(|item| Row { pool: None, item })
        .collect())
}

fn endpoints(client: &Client, pool: Option<&str>) -> Result<Vec<Row>, CtlError> {
    let pools = match pool {
        Some(p) => vec![p.to_owned()],
        None => client
            .list("pools")?
            .items
            .into_iter()
            .map(|i| i.name)
            .collect(),
    };
    let mut rows = Vec::new();
    for p in pools {
        let list = match client.list(&format!("pools/{p}/endpoints")) {
            Ok(l) => l,
            // Deleted since the pools were listed; with --pool, a typo worth reporting.
            Err(e) if e.status() == Some(404) && pool.is_none() => continue,
            Err(e) => return Err(e.into()),
        };
        rows.extend(list.items.into_iter().map(|mut item| {
            item.name = endpoint_addr(&p, item.name);
            Row {
                pool: Some(p.clone()),
                item,
            }
        }));
    }
    Ok(rows)
}

/// An endpoint's address, whether the list names it `ADDR` or `POOL/ADDR`.
fn endpoint_addr(pool: &str, name: String) -> String {
    match name.strip_prefix(pool).and_then(|r| r.strip_prefix('/')) {
        Some(addr) => addr.to_owned(),
        None => name,
    }
}

fn row_json(r: &Row) -> Value {
    let mut v = json!({"name": r.item.name, "version": r.item.version, "spec": r.item.spec});
    if let Some(p) = &r.pool {
        v["pool"] = json!(p);
    }
    v
}

fn render(what: What, rows: &[Row]) -> String {
    // Keys a spec leaves out take their defaults (docs/CONFIG.md); "-" shows that.
    let (header, keys): (&[&str], &[&str]) = match what {
        What::Listeners => (
            &["NAME", "VERSION", "BIND", "PROTOCOL", "POOL"],
            &["bind", "protocol", "pool"],
        ),
        What::Routes => (
            &[
                "NAME",
                "VERSION",
                "LISTENER",
                "HOST",
                "PATH_PREFIX",
                "POOL",
                "FILTERS",
            ],
            &["listener", "host", "path_prefix", "pool", "filters"],
        ),
        What::Pools => (
            &["NAME", "VERSION", "BALANCE", "MAX_CONN", "HEALTH"],
            &["balance", "max_conn", "health/check"],
        ),
        What::Endpoints => (
            &["POOL", "ADDR", "VERSION", "WEIGHT", "TTL"],
            &["weight", "ttl"],
        ),
        // The PEM text is not a column (`-o json` has it, without the key).
        What::Certificates => (
            &["NAME", "VERSION", "LISTENER", "DEFAULT"],
            &["listener", "default"],
        ),
        What::Filters => (&["NAME", "VERSION", "KIND"], &["kind"]),
    };
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut cells = Vec::new();
            if let Some(p) = &r.pool {
                cells.push(p.clone());
            }
            cells.push(r.item.name.clone());
            cells.push(r.item.version.to_string());
            cells.extend(keys.iter().map(|k| field(&r.item.spec, k)));
            cells
        })
        .collect();
    table(header, &body)
}

/// The text of `spec`'s key at `path` (nested keys joined with `/`), `-` when absent.
fn field(spec: &Value, path: &str) -> String {
    let mut v = spec;
    for key in path.split('/') {
        match v.get(key) {
            Some(next) => v = next,
            None => return "-".into(),
        }
    }
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

/// Columns separated by two spaces, each as wide as its widest cell; the last column is not
/// padded so lines carry no trailing blanks.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    for r in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            if i + 1 == r.len() {
                line.push_str(c);
            } else {
                line.push_str(&format!("{c:<w$}  ", w = widths[i]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pool: Option<&str>, name: &str, version: u64, spec: Value) -> Row {
        Row {
            pool: pool.map(str::to_owned),
            item: Item {
                name: name.into(),
                version,
                spec,
            },
        }
    }

    #[test]
    fn table_aligns_columns() {
        let t = table(
            &["NAME", "VERSION", "BIND"],
            &[
                vec!["web".into(), "12".into(), "0.0.0.0:8080".into()],
                vec!["postgres".into(), "7".into(), "-".into()],
            ],
        );
        assert_eq!(
            t,
            "NAME      VERSION  BIND\n\
             web       12       0.0.0.0:8080\n\
             postgres  7        -\n"
        );
    }

    #[test]
    fn pools_table_shows_nested_health_and_defaults() {
        let rows = [
            row(
                None,
                "app",
                3,
                json!({"balance": "least_conn", "max_conn": 4, "health": {"check": "http"}}),
            ),
            row(None, "db", 5, json!({})),
        ];
        assert_eq!(
            render(What::Pools, &rows),
            "NAME  VERSION  BALANCE     MAX_CONN  HEALTH\n\
             app   3        least_conn  4         http\n\
             db    5        -           -         -\n"
        );
    }

    #[test]
    fn endpoints_table_and_json_name_the_pool() {
        let rows = [
            row(Some("app"), "127.0.0.1:9001", 4, json!({"weight": 10})),
            row(
                Some("app"),
                "127.0.0.1:9002",
                9,
                json!({"weight": 1, "ttl": "10s"}),
            ),
        ];
        assert_eq!(
            render(What::Endpoints, &rows),
            "POOL  ADDR            VERSION  WEIGHT  TTL\n\
             app   127.0.0.1:9001  4        10      -\n\
             app   127.0.0.1:9002  9        1       10s\n"
        );
        assert_eq!(
            row_json(&rows[1]),
            json!({"pool": "app", "name": "127.0.0.1:9002", "version": 9,
                   "spec": {"weight": 1, "ttl": "10s"}})
        );
    }

    #[test]
    fn endpoint_names_with_or_without_pool() {
        assert_eq!(
            endpoint_addr("app", "app/10.0.0.1:80".into()),
            "10.0.0.1:80"
        );
        assert_eq!(endpoint_addr("app", "10.0.0.1:80".into()), "10.0.0.1:80");
    }
}
