//! Command-line interface.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// weir: an HTTP and TCP load balancer.
///
/// Start with `weir demo` to see it balance three built-in backends, then
/// write a config file (see examples/ and docs/CONFIG.md), check it with
/// `weir check weir.toml`, and run it with `weir run -c weir.toml`.
#[derive(Debug, Parser)]
#[command(name = "weir", version, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the load balancer, from a config file (-c) or from its store (--data).
    ///
    /// A file is reloaded when it changes and on SIGHUP; an invalid file is
    /// rejected with its errors logged, and the running config stays. Without
    /// -c the config lives in a durable store and changes through the admin
    /// API (docs/API.md), each validated, committed and applied live. SIGTERM
    /// or SIGINT stop accepting, let in-flight requests finish within
    /// `global.drain_grace` (default 30s), then exit.
    Run(RunArgs),
    /// Validate config files without running them.
    ///
    /// Prints every error as FILE:LINE:COL with the offending line (the first
    /// 100 of them, then how many more), and exits 1 if any file has an error.
    /// `-` reads standard input. A file over 16 MiB is refused.
    Check(CheckArgs),
    /// Run three demo backends and a balancer in front of them; no file needed.
    Demo(DemoArgs),
    /// Change and inspect a running weir through its admin API.
    ///
    /// Talks to --url (or $WEIR_URL, default http://127.0.0.1:9901); a bearer token is
    /// read from --token-file, or taken from $WEIR_TOKEN. Errors are printed as
    /// `error: TITLE: DETAIL (field FIELD)` with exit status 1.
    Ctl(crate::ctl::CtlArgs),
    /// Write a self-signed certificate and key for trying TLS out.
    ///
    /// Writes OUT/NAME.pem and OUT/NAME.key (an ECDSA P-256 key, readable by its owner
    /// only), with NAME and the other names as subjectAltNames; an existing pair is kept
    /// unless --force. Clients do not trust it:
    /// `curl --cacert OUT/NAME.pem` or `-k`. For production, use a certificate from a CA.
    Cert(CertArgs),
    /// Print the version.
    Version,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The config file (TOML). Without it, the config lives in the durable store
    /// under --data and is managed through the admin API (`weir ctl`).
    #[arg(
        short = 'c',
        long = "config",
        value_name = "FILE",
        conflicts_with = "data"
    )]
    pub config: Option<PathBuf>,
    /// The store's directory, when running without -c [default: ./weir-data].
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// A file holding the admin API's bearer token [default: admin.token_file].
    /// Required when the admin listener is not on loopback.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Data-plane worker threads, at least 1 [default: one per CPU].
    #[arg(long, value_name = "N", value_parser = threads)]
    pub threads: Option<usize>,
    /// Where the admin listener (health, metrics, stats, dashboard) listens
    /// [default: admin.listen from the file, else 127.0.0.1:9901].
    #[arg(long, value_name = "ADDR")]
    pub admin: Option<SocketAddr>,
    /// A store shared by several weirs: etcd://HOST:PORT[,HOST:PORT...]/PREFIX. Every weir
    /// given the same URL serves the same config; a change through any of them reaches all.
    /// Needs a weir built with `--features etcd`.
    #[arg(long, value_name = "URL", conflicts_with_all = ["config", "data"])]
    pub store: Option<String>,
    /// The CA certificate (PEM) that signs etcd's; with it weir talks TLS to etcd.
    #[arg(long, value_name = "FILE", requires = "store")]
    pub store_ca: Option<PathBuf>,
    /// A client certificate (PEM) for etcd's client-certificate authentication.
    #[arg(long, value_name = "FILE", requires_all = ["store", "store_key"])]
    pub store_cert: Option<PathBuf>,
    /// The key (PEM) of --store-cert.
    #[arg(long, value_name = "FILE", requires_all = ["store", "store_cert"])]
    pub store_key: Option<PathBuf>,
    /// A file whose first line is USER:PASSWORD, for etcd's authentication.
    #[arg(long, value_name = "FILE", requires = "store")]
    pub store_user_file: Option<PathBuf>,
    /// Where this replica keeps the last config it applied from --store, to start from
    /// while etcd is away [default: ./weir-data/store-cache.json].
    #[arg(long, value_name = "FILE", requires = "store")]
    pub store_cache: Option<PathBuf>,
    /// How long a call to --store may take (a write, a heartbeat, a read of the config):
    /// each is tried on every member in turn within it, and a write etcd does not answer
    /// in time answers 503 store-unreachable [default: 5s].
    #[arg(long, value_name = "DURATION", requires = "store", value_parser = store_timeout)]
    pub store_timeout: Option<std::time::Duration>,
    /// A file named without -c (`weir run weir.toml`): taken only to say how to give it.
    #[arg(hide = true, value_name = "FILE")]
    pub stray: Option<PathBuf>,
}

/// `--store-timeout`: a duration (`"5s"`, `"1500ms"`) above zero.
fn store_timeout(s: &str) -> Result<std::time::Duration, String> {
    match weir_config::parse_duration(s)? {
        d if d.is_zero() => Err("it must be more than 0s".into()),
        d => Ok(d),
    }
}

/// `--threads N`: a runtime with no worker would accept nothing.
fn threads(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("weir needs at least 1 worker thread (the default is one per CPU)".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{e}: give a number of threads, at least 1")),
    }
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Files to check.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CertArgs {
    /// The names the certificate is for (DNS names, `*.` wildcards, IP addresses); the
    /// first names the files.
    #[arg(required = true, value_name = "NAME")]
    pub names: Vec<String>,
    /// The directory the files go to (made if missing).
    #[arg(long, default_value = "certs", value_name = "DIR")]
    pub out: PathBuf,
    /// Days it is valid.
    #[arg(long, default_value_t = 90, value_name = "N")]
    pub days: u32,
    /// Replace OUT/NAME.pem and OUT/NAME.key if they exist (without it, an existing pair is
    /// kept and nothing is written).
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where the demo balancer listens.
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR")]
    pub listen: SocketAddr,
    /// Where it also listens with HTTPS (a self-signed certificate for localhost and
    /// 127.0.0.1, made at start).
    #[arg(long, default_value = "127.0.0.1:8443", value_name = "ADDR")]
    pub tls_listen: SocketAddr,
    /// Where the dashboard, metrics and stats are served.
    #[arg(long, default_value = "127.0.0.1:9901", value_name = "ADDR")]
    pub admin: SocketAddr,
    /// Data-plane worker threads, at least 1 [default: one per CPU].
    #[arg(long, value_name = "N", value_parser = threads)]
    pub threads: Option<usize>,
}
