//! `weir ctl listener ...`.

use std::net::SocketAddr;

use clap::{Subcommand, ValueEnum};
use serde_json::{json, Map, Value};
use weir_store::Kind;

use super::client::Client;
use super::error::CtlError;
use super::paths::path;
use super::resource::{create, delete, report_delete};

#[derive(Debug, Subcommand)]
pub enum ListenerCommand {
    /// Create a listener; it accepts at once. Fails if it exists.
    Create {
        name: String,
        /// IP:PORT to listen on.
        #[arg(long)]
        bind: SocketAddr,
        #[arg(long)]
        protocol: Option<Protocol>,
        /// The pool for requests no route matches (required for tcp).
        #[arg(long)]
        pool: Option<String>,
    },
    /// Delete a listener: it stops accepting, its connections drain.
    ///
    /// A listener that does not exist is reported on stderr and the exit status is 0.
    Delete { name: String },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Protocol {
    Http,
    Tcp,
}

pub fn run(client: &Client, cmd: ListenerCommand) -> Result<(), CtlError> {
    match cmd {
        ListenerCommand::Create {
            name,
            bind,
            protocol,
            pool,
        } => {
            let mut spec = Map::new();
            spec.insert("bind".into(), json!(bind.to_string()));
            if let Some(p) = protocol {
                let p = match p {
                    Protocol::Http => "http",
                    Protocol::Tcp => "tcp",
                };
                spec.insert("protocol".into(), json!(p));
            }
            if let Some(p) = pool {
                spec.insert("pool".into(), json!(p));
            }
            let v = create(
                client,
                &path(Kind::Listener, &name),
                &Value::Object(spec),
                &format!("listener `{name}`"),
            )?;
            println!("listener {name} created (version {v})");
        }
        ListenerCommand::Delete { name } => {
            let d = delete(client, &path(Kind::Listener, &name))?;
            report_delete(&format!("listener {name}"), d);
        }
    }
    Ok(())
}
