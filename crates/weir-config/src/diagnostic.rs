//! What is wrong in a config source, located at a line and column: one diagnostic, and the
//! list of those found (capped at [`MAX_DIAGNOSTICS`]). Its own file because reading,
//! walking and validating all report with it, and the entry points in lib.rs return it.
//! How a diagnostic is shown (`impl Display`) is in span.rs, beside the source lines it cuts.

use std::fmt;

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
    /// [`MAX_EXCERPT_CHARS`](crate::span::MAX_EXCERPT_CHARS) is cut to that many chars around the span, with
    /// `...` where text was cut.
    pub source_line: String,
    /// Where the caret goes in `source_line`: 1-based, in characters.
    pub caret_col: usize,
    /// Caret width in characters, within `source_line` (at least 1).
    pub caret_len: usize,
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
