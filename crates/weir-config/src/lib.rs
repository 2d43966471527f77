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
mod client_addr;
mod duration;
mod fifo;
pub mod filter;
mod foreign;
mod host;
mod input;
mod json;
pub mod path;
mod read;
mod resources;
mod span;
mod suggest;
mod tls;
mod tls_files;
mod validate;
mod walk;
mod whole_file;

pub use addr::is_loopback;
pub use client_addr::{Cidr, SendProxy};
pub use fifo::FIFO_WAIT;
pub use filter::Filter;
pub use input::{read_source, read_token, TokenError, MAX_CONFIG_BYTES, MAX_TOKEN_BYTES};
pub use model::*;
pub use resources::{FieldProblem, ResourceChange, ResourceKind, Resources};
pub use span::MAX_EXCERPT_CHARS;

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
    /// Width of the span in characters, on its line (at least 1).
    pub len: usize,
    pub message: String,
    /// The offending source line, without its newline. A line longer than
    /// [`MAX_EXCERPT_CHARS`] is cut to that many chars around the span, with
    /// `...` where text was cut.
    pub source_line: String,
    /// Where the caret goes in `source_line`: 1-based, in characters.
    pub caret_col: usize,
    /// Caret width in characters, within `source_line` (at least 1).
    pub caret_len: usize,
}

/// `FILE:LINE:COL: error: message`, then the line and a caret under the span.
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        span::render(self, f)
    }
}

/// The most diagnostics kept for one source. Past that, more of them tell a
/// user nothing new (the file is broken in one way over and over), and each
/// one costs memory and output; the rest are only counted.
pub const MAX_DIAGNOSTICS: usize = 100;

/// How many diagnostics were found beyond the [`MAX_DIAGNOSTICS`] kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Omitted {
    pub errors: usize,
    pub warnings: usize,
}

impl Omitted {
    pub fn is_empty(&self) -> bool {
        self.errors == 0 && self.warnings == 0
    }
}

/// `... and 900 more errors and 2 more warnings not shown (only the first 100 are)`.
impl fmt::Display for Omitted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = |count: usize, word: &str| {
            format!("{count} more {word}{}", if count == 1 { "" } else { "s" })
        };
        let parts: Vec<String> = [(self.errors, "error"), (self.warnings, "warning")]
            .into_iter()
            .filter(|(count, _)| *count > 0)
            .map(|(count, word)| n(count, word))
            .collect();
        write!(
            f,
            "... and {} not shown (only the first {MAX_DIAGNOSTICS} are)",
            parts.join(" and ")
        )
    }
}

/// The errors (and warnings) found in one source; returned when it has at least one error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Diagnostics {
    /// At most [`MAX_DIAGNOSTICS`]: errors first, in file order, then warnings.
    pub list: Vec<Diagnostic>,
    /// Those found beyond `list`, counted, not kept.
    pub omitted: Omitted,
}

/// Each diagnostic, separated by a blank line; then how many more there were.
impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.list.iter().enumerate() {
            if i > 0 {
                f.write_str("\n\n")?;
            }
            d.fmt(f)?;
        }
        if !self.omitted.is_empty() {
            write!(f, "\n\n{}", self.omitted)?;
        }
        Ok(())
    }
}

impl Diagnostics {
    /// The errors kept (see [`Diagnostics::error_count`] for all of them).
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.list.iter().filter(|d| d.severity == Severity::Error)
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.list.iter().filter(|d| d.severity == Severity::Warning)
    }

    /// Every error found, kept or not.
    pub fn error_count(&self) -> usize {
        self.errors().count() + self.omitted.errors
    }
}

/// A successfully validated configuration and the warnings met on the way.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    /// At most [`MAX_DIAGNOSTICS`], in file order.
    pub warnings: Vec<Diagnostic>,
    /// Warnings found beyond `warnings` (`omitted.errors` is 0).
    pub omitted: Omitted,
}

/// Errors from [`load_file`] and [`read_source`]: the file could not be read,
/// is too large, or is invalid (which includes not being UTF-8).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{file}: cannot read: {source}")]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{file}: larger than {} MiB ({limit} bytes), the most weir reads from a config file",
        .limit >> 20
    )]
    TooLarge { file: String, limit: u64 },
    #[error("{0}")]
    Invalid(#[from] Diagnostics),
}

/// Reads and validates a config file as `weir check` does; `-` reads standard
/// input. Beyond [`parse_str`], it checks what the file points at that
/// `weir run` reads at start: `admin.token_file`.
pub fn load_file(path: &Path) -> Result<Loaded, LoadError> {
    let file = path.display().to_string();
    let source = read_source(path)?;
    Ok(parse(&source, &file, Files::Read)?)
}

/// Validates a config file's text already read (a reload) exactly as [`load_file`] does,
/// reading the files it names (token file, certificates); `file` names it in diagnostics.
pub fn parse_file_text(source: &str, file: &str) -> Result<Loaded, Diagnostics> {
    parse(source, file, Files::Read)
}

/// Parses and validates `source`; `file` is the name used in diagnostics.
/// Reads no other file.
pub fn parse_str(source: &str, file: &str) -> Result<Loaded, Diagnostics> {
    parse(source, file, Files::Skip)
}

/// Whether what is validated is a whole config file, whose rules ([`whole_file`]) apply and
/// whose named files (token file, certificates) are read.
#[derive(PartialEq)]
enum Files {
    Read,
    Skip,
}

fn parse(source: &str, file: &str, files: Files) -> Result<Loaded, Diagnostics> {
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
        filter::check_files(&mut sink, &walked);
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
    format!(
        "{}, {}, {}, {}",
        n(cfg.listeners.len(), "listener"),
        n(cfg.routes.len(), "route"),
        n(cfg.pools.len(), "pool"),
        n(endpoints, "endpoint"),
    )
}
