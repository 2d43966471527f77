//! `weir ctl`: the operator's CLI over the admin API (docs/API.md, "weir ctl").
//!
//! Every command reads the versions it needs itself, so a user never types one. Deletes are
//! retried when the version went stale between the read and the write (deleting is safe to
//! repeat); adds are not: an add that finds the resource present is a mistake to report.

mod apply;
mod certificate;
mod client;
mod export;
#[cfg(test)]
mod fake;
mod get;
mod listener;
mod pool;
mod register;
mod route;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use weir_store::Kind;

use self::client::{ApiError, Client, Precondition};

#[derive(Debug, Args)]
pub struct CtlArgs {
    /// The admin API's base URL.
    #[arg(long, env = "WEIR_URL", default_value = client::DEFAULT_URL, global = true)]
    pub url: String,
    /// A file holding the bearer token (whitespace trimmed); without it, the token is taken
    /// from $WEIR_TOKEN, if set.
    #[arg(long, value_name = "FILE", global = true)]
    pub token_file: Option<PathBuf>,
    #[command(subcommand)]
    pub command: CtlCommand,
}

#[derive(Debug, Subcommand)]
pub enum CtlCommand {
    /// List listeners, routes, pools, endpoints or certificates.
    Get(get::GetArgs),
    /// Create and delete pools; add and remove their endpoints.
    #[command(subcommand)]
    Pool(pool::PoolCommand),
    /// Create and delete routes.
    #[command(subcommand)]
    Route(route::RouteCommand),
    /// Create and delete listeners.
    #[command(subcommand)]
    Listener(listener::ListenerCommand),
    /// Add and delete certificates of TLS listeners (PEM files sent as resources).
    #[command(subcommand)]
    Certificate(certificate::CertificateCommand),
    /// Make the running config match a config file, in one transaction.
    ///
    /// The file is validated locally first (as `weir check` does). Only the differences
    /// are sent: resources the file adds, changes or leaves out. `[admin]` and `[global]`
    /// are process settings and are ignored. Endpoints registered with a lease (`weir ctl
    /// register`) belong to their services and are left alone. If the config changes
    /// meanwhile, the differences are computed again (up to 5 times). Running it twice
    /// in a row prints "no changes". A file with no listeners, routes or pools is refused.
    Apply(apply::ApplyArgs),
    /// Print the whole running config as TOML (`weir ctl export | weir check -` passes).
    Export,
    /// Run a command and keep it registered as an endpoint while it runs.
    ///
    /// Registers ADDR in POOL with a lease of --ttl, starts COMMAND, and renews the
    /// lease every ttl/3 (registering again if weir forgot it, e.g. after a restart).
    /// On SIGTERM or SIGINT, the endpoint is deregistered first, so weir stops sending it
    /// new requests, then the signal is passed to the command; SIGHUP is passed on as is.
    /// When the command exits, the endpoint is deregistered and `weir ctl` exits with the
    /// command's exit status (128+N if it was killed by signal N). If weir cannot be
    /// reached at start, the command runs anyway and registration is retried.
    Register(register::RegisterArgs),
}

/// Why a ctl command failed; printed as `error: ...` with exit status 1.
#[derive(Debug, thiserror::Error)]
pub enum CtlError {
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error("{0} already exists")]
    Exists(String),
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Token(#[from] weir_config::TokenError),
    /// The config file could not be read, or is too large.
    #[error(transparent)]
    Source(weir_config::LoadError),
    /// The diagnostics are complete messages of their own (`FILE:LINE:COL: error: ...`).
    #[error("{diags}\n{file}: {count} error{s}", s = if *.count == 1 { "" } else { "s" })]
    Invalid {
        file: String,
        count: usize,
        diags: weir_config::Diagnostics,
    },
    #[error("{0}")]
    FromToml(#[from] weir_control::from_toml::FromTomlError),
    #[error("cannot run {program}: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
}

pub fn ctl(args: CtlArgs) -> ExitCode {
    match run(args) {
        Ok(code) => code,
        Err(e @ CtlError::Invalid { .. }) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: CtlArgs) -> Result<ExitCode, CtlError> {
    let client = Client::new(&args.url, token(args.token_file.as_deref())?);
    match args.command {
        CtlCommand::Get(a) => get::get(&client, a)?,
        CtlCommand::Pool(c) => pool::run(&client, c)?,
        CtlCommand::Route(c) => route::run(&client, c)?,
        CtlCommand::Listener(c) => listener::run(&client, c)?,
        CtlCommand::Certificate(c) => certificate::run(&client, c)?,
        CtlCommand::Apply(a) => apply::apply(&client, a)?,
        CtlCommand::Export => export::export(&client)?,
        CtlCommand::Register(a) => return register::register(&client, a),
    }
    Ok(ExitCode::SUCCESS)
}

/// The bearer token: from `--token-file`, read by the rule `weir run` uses (bounded, not
/// empty), else from `$WEIR_TOKEN`.
fn token(file: Option<&std::path::Path>) -> Result<Option<String>, CtlError> {
    if let Some(p) = file {
        return Ok(Some(weir_config::read_token(p)?));
    }
    let Ok(t) = std::env::var("WEIR_TOKEN") else {
        return Ok(None);
    };
    let t = t.trim();
    Ok((!t.is_empty()).then(|| t.to_owned()))
}

/// The API path of a resource, unencoded; endpoints are named `POOL/ADDR` as in the store.
pub fn path(kind: Kind, name: &str) -> String {
    weir_store::resource_path(kind, name)
}

pub fn endpoint_path(pool: &str, addr: &str) -> String {
    format!("pools/{pool}/endpoints/{addr}")
}

/// Adds a resource (`If-None-Match: *`); finding it present is an error naming `what`.
fn create(
    client: &Client,
    path: &str,
    spec: &serde_json::Value,
    what: &str,
) -> Result<u64, CtlError> {
    match client.put(path, spec, Precondition::Absent) {
        Ok((version, _)) => Ok(version),
        Err(e) if e.status() == Some(412) => Err(CtlError::Exists(what.to_owned())),
        Err(e) => Err(e.into()),
    }
}

/// How a delete ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Deleted {
    Now,
    /// It did not exist (anymore): the wanted state holds, so this is not an error.
    AlreadyGone,
}

/// Reads the current version and deletes that version; when someone changed the resource
/// in between (412), reads again. Deleting is what the caller wants whatever the change was.
fn delete(client: &Client, path: &str) -> Result<Deleted, ApiError> {
    const TRIES: usize = 5;
    for attempt in 1.. {
        let Some((_, version)) = client.get(path)? else {
            return Ok(Deleted::AlreadyGone);
        };
        match client.delete(path, version) {
            Ok(()) => return Ok(Deleted::Now),
            Err(e) if e.status() == Some(404) => return Ok(Deleted::AlreadyGone),
            Err(e) if e.status() == Some(412) && attempt < TRIES => continue,
            Err(e) => return Err(e),
        }
    }
    unreachable!("the loop returns")
}

/// Prints the outcome of a delete: `deleted` to stdout, or a note that it was already gone.
fn report_delete(what: &str, d: Deleted) {
    match d {
        Deleted::Now => println!("{what} deleted"),
        Deleted::AlreadyGone => eprintln!("{what} does not exist; nothing to delete"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STALE: &str = r#"{"title":"precondition failed","status":412}"#;

    fn requests(log: &std::sync::Mutex<Vec<fake::Seen>>) -> Vec<String> {
        log.lock()
            .unwrap()
            .iter()
            .map(|s| {
                let m = s.if_match.as_deref().unwrap_or("-");
                format!("{} {} {m}", s.method, s.path)
            })
            .collect()
    }

    #[test]
    fn delete_reads_again_when_the_version_went_stale() {
        let (url, log) = fake::serve(|req, before| {
            let gets = before.iter().filter(|s| s.method == "GET").count() as u64;
            match req.method.as_str() {
                "GET" => (200, Some(3 + gets), "{}".into()),
                "DELETE" if req.if_match.as_deref() == Some("\"4\"") => (204, None, "".into()),
                _ => (412, None, STALE.into()),
            }
        });
        let c = Client::new(&url, None);
        assert_eq!(delete(&c, "pools/app").unwrap(), Deleted::Now);
        assert_eq!(
            requests(&log),
            [
                "GET /api/v1/pools/app -",
                r#"DELETE /api/v1/pools/app "3""#,
                "GET /api/v1/pools/app -",
                r#"DELETE /api/v1/pools/app "4""#,
            ]
        );
    }

    #[test]
    fn delete_gives_up_after_five_stale_versions() {
        let (url, log) = fake::serve(|req, _| match req.method.as_str() {
            "GET" => (200, Some(1), "{}".into()),
            _ => (412, None, STALE.into()),
        });
        let c = Client::new(&url, None);
        assert_eq!(delete(&c, "routes/r").unwrap_err().status(), Some(412));
        assert_eq!(requests(&log).len(), 10);
    }

    #[test]
    fn delete_of_something_absent_is_no_error() {
        let (url, _) = fake::serve(|_, _| (404, None, r#"{"title":"not found"}"#.into()));
        let c = Client::new(&url, None);
        assert_eq!(
            delete(&c, "pools/app/endpoints/[::1]:80").unwrap(),
            Deleted::AlreadyGone
        );
    }
}
