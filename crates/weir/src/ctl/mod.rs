//! `weir ctl`: the operator's CLI over the admin API (docs/API.md, "weir ctl").
//!
//! Every command reads the versions it needs itself, so a user never types one. Deletes are
//! retried when the version went stale between the read and the write (deleting is safe to
//! repeat); adds are not: an add that finds the resource present is a mistake to report.

mod apply;
mod certificate;
mod client;
mod error;
mod export;
#[cfg(test)]
mod fake;
mod get;
mod listener;
mod paths;
mod pool;
mod register;
mod resource;
mod route;

use std::path::PathBuf;
use std::process::ExitCode;

use self::client::Client;
use self::error::CtlError;
use clap::{Args, Subcommand};

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
