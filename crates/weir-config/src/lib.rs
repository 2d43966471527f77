//! weir's configuration: the model ([`model`]), TOML parsing with source spans,
//! validation that reports every error at its line and column, and defaults.
//!
//! Entry points: [`load_file`] and [`parse_str`]. Both return the validated
//! [`Config`] plus warnings, or every error found.

pub mod model;

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
        todo!()
    }
}

/// Every error (and warning) found in one source; returned when it has at least one error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        todo!()
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
    todo!()
}

/// Parses and validates `source`; `file` is the name used in diagnostics.
pub fn parse_str(source: &str, file: &str) -> Result<Loaded, Diagnostics> {
    todo!()
}

/// Parses a duration string: `"250ms"`, `"5s"`, `"2m"`, `"1h"`.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    todo!()
}
