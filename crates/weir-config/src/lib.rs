//! weir's configuration: the model ([`model`]), TOML parsing with source spans,
//! validation that reports every error at its line and column, and defaults.
//!
//! Entry points: [`load_file`] and [`parse_str`]. Both return the validated
//! [`Config`] plus warnings, or the errors found: the first [`MAX_DIAGNOSTICS`]
//! of them and a count of the rest. [`read_source`] reads a config of at most
//! [`MAX_CONFIG_BYTES`] from a file or standard input.

pub mod defaults;
pub mod model;

mod addr;
mod certificate;
mod certificate_check;
mod cidr;
mod client_addr;
mod diagnostic;
mod dns_name;
mod duration;
mod fifo;
pub mod filter;
mod filter_check;
mod foreign;
mod host;
mod host_match;
mod input;
mod json;
mod listener_path;
mod load_error;
mod names_check;
pub mod path;
mod read;
mod request_path;
mod resources;
mod send_proxy;
mod span;
mod suggest;
mod tls;
mod tls_check;
mod tls_files;
mod validate;
mod walk;
mod whole_file;

pub use addr::is_loopback;
pub use cidr::Cidr;
pub use diagnostic::{Diagnostic, Diagnostics, Omitted, Severity, MAX_DIAGNOSTICS};
pub use dns_name::endpoint_target;
pub use fifo::FIFO_WAIT;
pub use filter::Filter;
pub use input::{read_source, read_token, TokenError, MAX_CONFIG_BYTES, MAX_TOKEN_BYTES};
pub use load_error::LoadError;
pub use model::*;
pub use names_check::NameLookup;
pub use resources::{FieldProblem, ResourceChange, ResourceKind, Resources};
pub use send_proxy::SendProxy;
pub use span::MAX_EXCERPT_CHARS;

use std::path::Path;

/// A successfully validated configuration and the warnings met on the way.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    /// At most [`MAX_DIAGNOSTICS`], in file order.
    pub warnings: Vec<Diagnostic>,
    /// Warnings found beyond `warnings` (`omitted.errors` is 0).
    pub omitted: Omitted,
}

/// Reads and validates a config file as `weir check` does; `-` reads standard
/// input. Beyond [`parse_str`], it checks what the file points at that
/// `weir run` reads at start: `admin.token_file`.
pub fn load_file(path: &Path) -> Result<Loaded, LoadError> {
    let file = path.display().to_string();
    let source = read_source(path)?;
    Ok(parse(&source, &file, Files::Read, None)?)
}

/// [`load_file`], and each endpoint given by name looked up with `lookup`: one that does not
/// resolve is a warning at its line and column (`weir check`).
pub fn load_file_looking_up(path: &Path, lookup: NameLookup<'_>) -> Result<Loaded, LoadError> {
    let file = path.display().to_string();
    let source = read_source(path)?;
    Ok(parse(&source, &file, Files::Read, Some(lookup))?)
}

/// Validates a config file's text already read (a reload) exactly as [`load_file`] does,
/// reading the files it names (token file, certificates); `file` names it in diagnostics.
pub fn parse_file_text(source: &str, file: &str) -> Result<Loaded, Diagnostics> {
    parse(source, file, Files::Read, None)
}

/// Parses and validates `source`; `file` is the name used in diagnostics.
/// Reads no other file.
pub fn parse_str(source: &str, file: &str) -> Result<Loaded, Diagnostics> {
    parse(source, file, Files::Skip, None)
}

/// Whether what is validated is a whole config file, whose rules ([`whole_file`]) apply and
/// whose named files (token file, certificates) are read.
#[derive(PartialEq)]
enum Files {
    Read,
    Skip,
}

fn parse(
    source: &str,
    file: &str,
    files: Files,
    lookup: Option<NameLookup<'_>>,
) -> Result<Loaded, Diagnostics> {
    let map = span::SourceMap::new(source, file);
    let mut sink = read::Sink::new(&map);
    // Recoverable parsing gives every syntax error plus a best-effort tree, so
    // one run reports syntax and semantic problems together.
    let (doc, syntax) = toml::de::DeTable::parse_recoverable(source);
    // Another format than TOML is said first, before toml's errors on its every line.
    let offsets: Vec<usize> = syntax
        .iter()
        .map(|e| e.span().map_or(0, |s| s.start))
        .collect();
    if let Some((span, hint)) = foreign::hint(source, &offsets) {
        sink.syntax(span, hint);
    }
    // Taken one by one, so each of toml's errors is freed as soon as the sink has it.
    for e in syntax {
        let span = e.span().unwrap_or(0..0);
        // toml's message for `key =` with nothing after it reads as if a
        // bare word had been written; say what is actually wrong.
        let msg = if span.is_empty() && e.message().starts_with("string values must be quoted") {
            "missing value after `=`".to_string()
        } else {
            e.message().to_string()
        };
        sink.syntax(span, msg);
    }
    let walked = walk::document(&mut sink, doc.get_ref(), doc.span());
    validate::check(&mut sink, &walked);
    if files == Files::Read {
        whole_file::check(&mut sink, doc.get_ref(), &walked);
        if let (Some(path), Some(span)) = (&walked.config.admin.token_file, &walked.token_file) {
            // The same rule `weir run` applies when it starts, so the two agree.
            if let Err(e) = read_token(path) {
                sink.error(span.clone(), e.to_string());
            }
        }
        tls_files::check(&mut sink, &walked, std::time::SystemTime::now());
        filter_check::check_files(&mut sink, &walked);
    }
    if let Some(lookup) = lookup {
        names_check::check(&mut sink, &walked, lookup);
    }
    let (diags, omitted) = sink.finish();
    if diags.iter().any(|d| d.severity == Severity::Error) {
        return Err(Diagnostics {
            list: diags,
            omitted,
        });
    }
    Ok(Loaded {
        config: walked.config,
        warnings: diags,
        omitted,
    })
}

/// Parses a duration string: `"250ms"`, `"5s"`, `"2m"`, `"1h"`.
/// Zero (`"0s"`) is accepted; the config rejects it where it makes no sense.
/// Durations above 8760h (a year) are rejected.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    duration::parse(s)
}

/// One line for logs and `weir check`: "3 listeners, 4 routes, 2 pools, 5 endpoints".
pub fn summary(cfg: &Config) -> String {
    let n =
        |count: usize, word: &str| format!("{count} {word}{}", if count == 1 { "" } else { "s" });
    let endpoints = cfg.pools.values().map(|p| p.endpoints.len()).sum();
    let named: usize = cfg.pools.values().map(|p| p.named.len()).sum();
    let mut line = format!(
        "{}, {}, {}, {}",
        n(cfg.listeners.len(), "listener"),
        n(cfg.routes.len(), "route"),
        n(cfg.pools.len(), "pool"),
        n(endpoints, "endpoint"),
    );
    if named > 0 {
        line += &format!(", {}", n(named, "endpoint name"));
    }
    line
}
