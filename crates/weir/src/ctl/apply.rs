//! `weir ctl apply -f FILE`: the differences between a config file and the running config,
//! sent as one transaction.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Args;
use serde_json::{json, Value};
use weir_control::from_toml::{self, canonical_addr, Specs};
use weir_control::secret;
use weir_store::{endpoint_name, Kind};

use super::client::{ApiError, Client};
use super::error::CtlError;
use super::paths::path;

#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// The config file (TOML); `-` reads standard input.
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub file: PathBuf,
    /// Print the changes without sending them.
    #[arg(long)]
    pub dry_run: bool,
}

/// The running resources: version and spec by (kind, name).
pub type Current = BTreeMap<(Kind, String), (u64, Value)>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Add,
    Update,
    Delete,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub op: Op,
    pub kind: Kind,
    pub name: String,
    /// The version an update or delete replaces.
    pub version: Option<u64>,
    pub spec: Option<Value>,
}

impl Change {
    fn to_json(&self) -> Value {
        let p = path(self.kind, &self.name);
        match self.op {
            Op::Add => json!({"op": "put", "path": p, "if_none_match": "*", "spec": self.spec}),
            Op::Update => json!({
                "op": "put", "path": p, "if_match": self.version.map(|v| v.to_string()),
                "spec": self.spec,
            }),
            Op::Delete => json!({
                "op": "delete", "path": p, "if_match": self.version.map(|v| v.to_string()),
            }),
        }
    }

    fn line(&self) -> String {
        let sign = match self.op {
            Op::Add => '+',
            Op::Update => '~',
            Op::Delete => '-',
        };
        format!("{sign} {}", path(self.kind, &self.name))
    }
}

/// What the file wants that the running config does not have, in the order the transaction
/// sends it. Only the final state is validated, but each change's precondition is checked
/// against the state the changes before it left, so deletes come first, children before
/// their parents (an endpoint before its pool: deleting a pool takes its endpoints along,
/// and a later delete of one of them would find it gone); then puts, parents first.
///
/// Endpoints with a lease (`ttl` in their spec) belong to the services that registered them:
/// they are never changed or deleted; `skipped` names those the file also defines.
pub fn plan(desired: &Specs, current: &Current) -> (Vec<Change>, Vec<String>) {
    const DELETE_ORDER: [Kind; 6] = [
        Kind::Certificate,
        Kind::Route,
        Kind::Filter,
        Kind::Listener,
        Kind::Endpoint,
        Kind::Pool,
    ];
    const PUT_ORDER: [Kind; 6] = [
        Kind::Pool,
        Kind::Endpoint,
        Kind::Listener,
        Kind::Filter,
        Kind::Route,
        Kind::Certificate,
    ];
    let leased = |spec: &Value| spec.get("ttl").is_some();
    let mut changes = Vec::new();
    let mut skipped = Vec::new();
    for kind in DELETE_ORDER {
        for ((k, name), (version, spec)) in current.range((kind, String::new())..) {
            if *k != kind {
                break;
            }
            if !desired.contains_key(&(kind, name.clone())) && !leased(spec) {
                changes.push(Change {
                    op: Op::Delete,
                    kind,
                    name: name.clone(),
                    version: Some(*version),
                    spec: None,
                });
            }
        }
    }
    for kind in PUT_ORDER {
        for ((k, name), spec) in desired.range((kind, String::new())..) {
            if *k != kind {
                break;
            }
            let (op, version) = match current.get(&(kind, name.clone())) {
                None => (Op::Add, None),
                Some((_, cur)) if leased(cur) => {
                    skipped.push(path(kind, name));
                    continue;
                }
                // A certificate is read back without its key; the key must match the
                // certificate, so the same certificate means the same pair.
                Some((_, cur)) if *cur == *secret::shown(kind, spec) => continue,
                Some((v, _)) => (Op::Update, Some(*v)),
            };
            changes.push(Change {
                op,
                kind,
                name: name.clone(),
                version,
                spec: Some(spec.clone()),
            });
        }
    }
    (changes, skipped)
}

pub fn apply(client: &Client, args: ApplyArgs) -> Result<(), CtlError> {
    let file = args.file.display().to_string();
    let source = read(&args.file)?;
    if let Err(diags) = weir_config::parse_str(&source, &file) {
        let count = diags.error_count();
        return Err(CtlError::Invalid { file, count, diags });
    }
    let desired = from_toml::specs(&source)?;
    if desired.is_empty() {
        // Surely a wrong file rather than a wish to delete every listener, route and pool.
        return Err(CtlError::Usage(format!(
            "{file} defines no listeners, routes or pools; refusing to delete everything"
        )));
    }
    const TRIES: usize = 5;
    for attempt in 1.. {
        let current = fetch(client)?;
        let (changes, skipped) = plan(&desired, &current);
        if attempt == 1 {
            for p in &skipped {
                eprintln!("{p} is registered with a lease; left to its service");
            }
        }
        if changes.is_empty() {
            println!("no changes");
            return Ok(());
        }
        for c in &changes {
            println!("{}", c.line());
        }
        let count = |op| changes.iter().filter(|c| c.op == op).count();
        let summary = format!(
            "{} added, {} updated, {} deleted",
            count(Op::Add),
            count(Op::Update),
            count(Op::Delete)
        );
        if args.dry_run {
            println!("{summary} (dry run, nothing sent)");
            return Ok(());
        }
        match client.transaction(changes.iter().map(Change::to_json).collect()) {
            Ok(r) => {
                println!("{summary} (revision {})", r.revision);
                return Ok(());
            }
            Err(e) if e.status() == Some(412) && attempt < TRIES => {
                eprintln!("the config changed meanwhile; comparing again");
            }
            Err(e) => return Err(e.into()),
        }
    }
    unreachable!("the loop returns")
}

/// Reads the file as `weir check` and `weir run -c` do: at most 16 MiB, UTF-8 checked.
fn read(file: &std::path::Path) -> Result<String, CtlError> {
    weir_config::read_source(file).map_err(|e| match e {
        weir_config::LoadError::Invalid(diags) => CtlError::Invalid {
            file: file.display().to_string(),
            count: diags.error_count(),
            diags,
        },
        other => CtlError::Source(other),
    })
}

/// Every running resource. The lists are read one after the other, not atomically; a change
/// that slips in between makes the transaction's preconditions fail, and the caller reads
/// again.
fn fetch(client: &Client) -> Result<Current, ApiError> {
    let mut cur = Current::new();
    for (kind, p) in [
        (Kind::Listener, "listeners"),
        (Kind::Route, "routes"),
        (Kind::Pool, "pools"),
        (Kind::Certificate, "certificates"),
        (Kind::Filter, "filters"),
    ] {
        let list = match client.list(p) {
            Ok(l) => l,
            // A weir from before certificate or filter resources.
            Err(e)
                if matches!(kind, Kind::Certificate | Kind::Filter) && e.status() == Some(404) =>
            {
                continue
            }
            Err(e) => return Err(e),
        };
        for it in list.items {
            cur.insert((kind, it.name), (it.version, it.spec));
        }
    }
    let pools: Vec<String> = cur
        .keys()
        .filter(|(k, _)| *k == Kind::Pool)
        .map(|(_, n)| n.clone())
        .collect();
    for pool in pools {
        let list = match client.list(&format!("pools/{pool}/endpoints")) {
            Ok(l) => l,
            Err(e) if e.status() == Some(404) => continue,
            Err(e) => return Err(e),
        };
        for it in list.items {
            let addr = it.name.rsplit('/').next().unwrap_or(&it.name);
            cur.insert(
                (Kind::Endpoint, endpoint_name(&pool, &canonical_addr(addr))),
                (it.version, it.spec),
            );
        }
    }
    Ok(cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desired(toml: &str) -> Specs {
        from_toml::specs(toml).unwrap()
    }

    const FILE: &str = r#"
[listeners.web]
bind = "127.0.0.1:8080"
pool = "app"
[routes.api]
listener = "web"
path_prefix = "/api"
pool = "app"
[pools.app]
balance = "least_conn"
endpoints = [{ addr = "127.0.0.1:9001", weight = 3 }, { addr = "127.0.0.1:9002" }]
"#;

    /// The running state `FILE` leaves, at versions 1..
    fn applied() -> Current {
        desired(FILE)
            .into_iter()
            .enumerate()
            .map(|(i, (k, spec))| (k, (i as u64 + 1, spec)))
            .collect()
    }

    fn ops(changes: &[Change]) -> Vec<String> {
        changes
            .iter()
            .map(|c| format!("{} {:?}", c.line(), c.version))
            .collect()
    }

    #[test]
    fn empty_store_adds_parents_first() {
        let (c, skipped) = plan(&desired(FILE), &Current::new());
        assert!(skipped.is_empty());
        assert_eq!(
            ops(&c),
            [
                "+ pools/app None",
                "+ pools/app/endpoints/127.0.0.1:9001 None",
                "+ pools/app/endpoints/127.0.0.1:9002 None",
                "+ listeners/web None",
                "+ routes/api None",
            ]
        );
        assert_eq!(
            c[1].to_json(),
            json!({"op": "put", "path": "pools/app/endpoints/127.0.0.1:9001",
                   "if_none_match": "*", "spec": {"weight": 3}})
        );
    }

    #[test]
    fn same_state_means_no_changes() {
        let (c, _) = plan(&desired(FILE), &applied());
        assert!(c.is_empty(), "{:?}", ops(&c));
    }

    #[test]
    fn changed_and_removed_resources_carry_their_versions() {
        let mut cur = applied();
        // Something not in the file, in a pool the file keeps, and a whole pool the file lacks.
        cur.insert((Kind::Pool, "old".into()), (20, json!({})));
        cur.insert(
            (Kind::Endpoint, "old/127.0.0.1:7000".into()),
            (21, json!({})),
        );
        cur.insert(
            (Kind::Endpoint, "app/127.0.0.1:9009".into()),
            (22, json!({"weight": 1})),
        );
        cur.insert(
            (Kind::Route, "legacy".into()),
            (23, json!({"listener": "web", "pool": "old"})),
        );
        let new = FILE.replace("least_conn", "p2c");
        let (c, _) = plan(&desired(&new), &cur);
        assert_eq!(
            ops(&c),
            [
                "- routes/legacy Some(23)",
                "- pools/app/endpoints/127.0.0.1:9009 Some(22)",
                "- pools/old/endpoints/127.0.0.1:7000 Some(21)",
                "- pools/old Some(20)",
                "~ pools/app Some(3)",
            ]
        );
        assert_eq!(
            c[0].to_json(),
            json!({"op": "delete", "path": "routes/legacy", "if_match": "23"})
        );
        assert_eq!(
            c[4].to_json(),
            json!({"op": "put", "path": "pools/app", "if_match": "3", "spec": {"balance": "p2c"}})
        );
    }

    #[test]
    fn a_stale_transaction_is_computed_again() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("weir.toml");
        std::fs::write(
            &file,
            "[listeners.web]\nbind = \"127.0.0.1:1\"\npool = \"app\"\n\
             [pools.app]\nbalance = \"p2c\"\nendpoints = []\n",
        )
        .unwrap();
        // Someone adds the same pool between our read and our write.
        let (url, log) = super::super::fake::serve(|req, before| {
            let raced = before.iter().any(|s| s.method == "POST");
            let body = match (req.method.as_str(), req.path.as_str()) {
                ("GET", "/api/v1/pools") if raced => {
                    r#"{"revision":9,"items":[{"name":"app","version":9,"spec":{"balance":"p2c"}}]}"#
                }
                ("GET", _) => r#"{"revision":8,"items":[]}"#,
                ("POST", _) if !raced => {
                    return (
                        412,
                        None,
                        r#"{"title":"precondition failed","change":0}"#.into(),
                    )
                }
                _ => r#"{"revision":10,"results":[]}"#,
            };
            (200, None, body.into())
        });
        let client = Client::new(&url, None);
        apply(
            &client,
            ApplyArgs {
                file,
                dry_run: false,
            },
        )
        .unwrap();
        let sent: Vec<Value> = log
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.method == "POST")
            .map(|s| serde_json::from_str::<Value>(&s.body).unwrap()["changes"].clone())
            .collect();
        assert_eq!(sent.len(), 2);
        assert_eq!(sent[0].as_array().unwrap().len(), 2, "{}", sent[0]);
        assert_eq!(
            sent[1],
            json!([{"op": "put", "path": "listeners/web", "if_none_match": "*",
                    "spec": {"bind": "127.0.0.1:1", "pool": "app"}}])
        );
    }

    #[test]
    fn leased_endpoints_are_left_alone() {
        let mut cur = applied();
        cur.insert(
            (Kind::Endpoint, "app/127.0.0.1:9100".into()),
            (30, json!({"weight": 1, "ttl": "10s"})),
        );
        // The file also names a registered endpoint: still not touched.
        let key = (Kind::Endpoint, "app/127.0.0.1:9002".to_string());
        cur.insert(key, (31, json!({"weight": 5, "ttl": "10s"})));
        let (c, skipped) = plan(&desired(FILE), &cur);
        assert!(c.is_empty(), "{:?}", ops(&c));
        assert_eq!(skipped, ["pools/app/endpoints/127.0.0.1:9002"]);
    }
}
