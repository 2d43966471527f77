//! weir's configuration: the model ([`model`]), TOML parsing with source spans,
//! validation that reports every error at its line and column, and defaults.
//!
//! Entry points: [`load_file`] and [`parse_str`]. Both return the validated
//! [`Config`] plus warnings, or every error found.

pub mod defaults;
pub mod model;

mod addr;
mod duration;
mod host;
mod read;
mod span;
mod suggest;
mod validate;
mod walk;

pub use addr::is_loopback;
pub use model::*;

use std::fmt;
use std::path::Path;

/// How serious a [`Diagnostic`] is. Warnings never fail a load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

/// One problem in a config source, located at a line and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    /// The file name as given by the user (or `-` for stdin, `<demo>` for embedded).
    pub file: String,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub col: usize,
    /// Caret width in characters (at least 1).
    pub len: usize,
    pub message: String,
    /// The offending source line, without its newline.
    pub source_line: String,
}

/// `FILE:LINE:COL: error: message`, then the line and a caret under the span.
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        span::render(self, f)
    }
}

/// Every error (and warning) found in one source; returned when it has at least one error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Diagnostics(pub Vec<Diagnostic>);

/// Each diagnostic, separated by a blank line.
impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n\n")?;
            }
            d.fmt(f)?;
        }
        Ok(())
    }
}

impl Diagnostics {
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter().filter(|d| d.severity == Severity::Error)
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter().filter(|d| d.severity == Severity::Warning)
    }
}

/// A successfully validated configuration and the warnings met on the way.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    pub warnings: Vec<Diagnostic>,
}

/// Errors from [`load_file`]: the file could not be read, or it is invalid.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{file}: cannot read: {source}")]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Invalid(#[from] Diagnostics),
}

/// Reads and validates a config file; `-` reads standard input.
pub fn load_file(path: &Path) -> Result<Loaded, LoadError> {
    let file = path.display().to_string();
    let read = if file == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).map(|_| s)
    } else {
        std::fs::read_to_string(path)
    };
    let source = read.map_err(|source| LoadError::Read {
        file: file.clone(),
        source,
    })?;
    Ok(parse_str(&source, &file)?)
}

/// Parses and validates `source`; `file` is the name used in diagnostics.
pub fn parse_str(source: &str, file: &str) -> Result<Loaded, Diagnostics> {
    let map = span::SourceMap::new(source, file);
    let mut sink = read::Sink::new(&map);
    // Recoverable parsing gives every syntax error plus a best-effort tree, so
    // one run reports syntax and semantic problems together.
    let (doc, syntax) = toml::de::DeTable::parse_recoverable(source);
    for e in &syntax {
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
    let diags = sink.finish();
    if diags.iter().any(|d| d.severity == Severity::Error) {
        return Err(Diagnostics(diags));
    }
    Ok(Loaded {
        config: walked.config,
        warnings: diags,
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
    format!(
        "{}, {}, {}, {}",
        n(cfg.listeners.len(), "listener"),
        n(cfg.routes.len(), "route"),
        n(cfg.pools.len(), "pool"),
        n(endpoints, "endpoint"),
    )
}
