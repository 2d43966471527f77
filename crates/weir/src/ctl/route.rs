//! `weir ctl route ...`.

use clap::Subcommand;
use serde_json::{json, Map, Value};
use weir_store::Kind;

use super::client::Client;
use super::error::CtlError;
use super::paths::path;
use super::resource::{create, delete, report_delete};

#[derive(Debug, Subcommand)]
pub enum RouteCommand {
    /// Create a route; fails if it exists.
    Create {
        name: String,
        /// The listener whose requests it routes.
        #[arg(long)]
        listener: String,
        /// Where matching requests go.
        #[arg(long)]
        pool: String,
        /// Exact host, or `*.example.com` [default: any host].
        #[arg(long)]
        host: Option<String>,
        /// The longest matching prefix wins [default: /].
        #[arg(long, value_name = "P")]
        path_prefix: Option<String>,
    },
    /// Delete a route.
    ///
    /// A route that does not exist is reported on stderr and the exit status is 0.
    Delete { name: String },
}

pub fn run(client: &Client, cmd: RouteCommand) -> Result<(), CtlError> {
    match cmd {
        RouteCommand::Create {
            name,
            listener,
            pool,
            host,
            path_prefix,
        } => {
            let mut spec = Map::new();
            spec.insert("listener".into(), json!(listener));
            if let Some(h) = host {
                spec.insert("host".into(), json!(h));
            }
            if let Some(p) = path_prefix {
                spec.insert("path_prefix".into(), json!(p));
            }
            spec.insert("pool".into(), json!(pool));
            let v = create(
                client,
                &path(Kind::Route, &name),
                &Value::Object(spec),
                &format!("route `{name}`"),
            )?;
            println!("route {name} created (version {v})");
        }
        RouteCommand::Delete { name } => {
            let d = delete(client, &path(Kind::Route, &name))?;
            report_delete(&format!("route {name}"), d);
        }
    }
    Ok(())
}
