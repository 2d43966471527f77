//! Byte spans → line/column, and the rustc-style rendering of a diagnostic.
//!
//! toml gives byte offsets; users read characters. Everything user-facing
//! (column, caret width) is counted in chars so non-ASCII lines still line up.

use std::fmt;
use std::ops::Range;

use crate::{Diagnostic, Severity};

/// One source text with its line starts, so each lookup is a binary search.
pub(crate) struct SourceMap<'s> {
    file: &'s str,
    src: &'s str,
    /// Byte offset at which each line begins; always starts with 0.
    line_starts: Vec<usize>,
}

impl<'s> SourceMap<'s> {
    pub(crate) fn new(src: &'s str, file: &'s str) -> Self {
        let line_starts = std::iter::once(0)
            .chain(src.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        SourceMap {
            file,
            src,
            line_starts,
        }
    }

    /// Builds a diagnostic for `span`. A span running past its first line
    /// (a multi-line array, say) is cut at the end of that line; an empty
    /// span still gets one caret.
    pub(crate) fn diagnostic(
        &self,
        severity: Severity,
        span: Range<usize>,
        message: String,
    ) -> Diagnostic {
        let start = self.clamp(span.start);
        let end = self.clamp(span.end.max(start));
        let idx = self.line_index(start);
        let line_start = self.line_starts[idx];
        let line = self.line_text(idx);
        let line_end = line_start + line.len();
        let col = self.src[line_start..start].chars().count() + 1;
        let len = self.src[start..end.min(line_end).max(start)]
            .chars()
            .count()
            .max(1);
        Diagnostic {
            severity,
            file: self.file.to_string(),
            line: idx + 1,
            col,
            len,
            message,
            source_line: line.to_string(),
        }
    }

    /// 1-based line number of a byte offset (used in "first defined at line N").
    pub(crate) fn line_of(&self, offset: usize) -> usize {
        self.line_index(self.clamp(offset)) + 1
    }

    /// Snaps an offset into the text and onto a char boundary, so a stray
    /// span can never panic the renderer.
    fn clamp(&self, mut offset: usize) -> usize {
        offset = offset.min(self.src.len());
        while !self.src.is_char_boundary(offset) {
            offset -= 1;
        }
        offset
    }

    fn line_index(&self, offset: usize) -> usize {
        let idx = self.line_starts.partition_point(|&s| s <= offset) - 1;
        // An offset at the very end of a file ending in '\n' would land on an
        // empty phantom line; point at the end of the last real line instead.
        if idx > 0 && self.line_starts[idx] == self.src.len() {
            idx - 1
        } else {
            idx
        }
    }

    /// The text of line `idx`, without its `\n` (or `\r\n`).
    fn line_text(&self, idx: usize) -> &'s str {
        let start = self.line_starts[idx];
        let end = self
            .line_starts
            .get(idx + 1)
            .map_or(self.src.len(), |&next| next - 1);
        let text = &self.src[start..end.max(start)];
        text.strip_suffix('\r').unwrap_or(text)
    }
}

/// ```text
/// weir.toml:12:1: error: unknown key `bnd`, did you mean `bind`?
///    12 | bnd = "0.0.0.0:8080"
///       | ^^^
/// ```
pub(crate) fn render(d: &Diagnostic, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let kind = match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    writeln!(f, "{}:{}:{}: {kind}: {}", d.file, d.line, d.col, d.message)?;
    let width = d.line.to_string().len().max(5);
    writeln!(f, "{:>width$} | {}", d.line, d.source_line)?;
    // Copy tabs from the source line into the padding so the caret sits under
    // the right character whatever the terminal's tab width.
    let pad: String = d
        .source_line
        .chars()
        .take(d.col.saturating_sub(1))
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    write!(f, "{:>width$} | {pad}{}", "", "^".repeat(d.len.max(1)))
}
