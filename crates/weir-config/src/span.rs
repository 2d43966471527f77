//! Byte spans → line/column, and the rustc-style rendering of a diagnostic.
//!
//! toml gives byte offsets; users read characters. Everything user-facing
//! (column, caret width) is counted in chars so non-ASCII lines still line up.

use std::fmt;
use std::ops::Range;

use crate::diagnostic::{Diagnostic, Severity};

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
    /// span still gets one caret. Only called for the diagnostics that are
    /// kept: counting the column walks the line.
    pub(crate) fn diagnostic(
        &self,
        severity: Severity,
        span: Range<usize>,
        message: String,
    ) -> Diagnostic {
        let start = self.clamp(span.start);
        let end = self.end_on_line(span);
        let idx = self.line_index(start);
        let line_start = self.line_starts[idx];
        let line = self.line_text(idx);
        let col0 = self.src[line_start..start].chars().count();
        let len = self.src[start..end].chars().count().max(1);
        let (mut source_line, caret_col, caret_len) = excerpt(line, col0, len);
        hide_private_key(&mut source_line);
        Diagnostic {
            severity,
            file: self.file.to_string(),
            line: idx + 1,
            col: col0 + 1,
            len,
            message: cut_message(message),
            source_line,
            caret_col,
            caret_len,
        }
    }

    /// Where a span's caret ends: its end, or the end of its first line.
    pub(crate) fn end_on_line(&self, span: Range<usize>) -> usize {
        let start = self.clamp(span.start);
        let line_end = {
            let idx = self.line_index(start);
            self.line_starts[idx] + self.line_text(idx).len()
        };
        self.clamp(span.end.max(start)).min(line_end).max(start)
    }

    /// 1-based line number of a byte offset (used in "first defined at line N").
    pub(crate) fn line_of(&self, offset: usize) -> usize {
        self.line_index(self.clamp(offset)) + 1
    }

    /// Snaps an offset into the text and onto a char boundary, so a stray
    /// span can never panic the renderer. Two offsets clamp to the same value
    /// exactly when they render at the same line and column.
    pub(crate) fn clamp(&self, mut offset: usize) -> usize {
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

/// The longest source line shown whole; a longer one is cut to a window of
/// this many chars around the span. A minified or generated file can put a
/// whole config on one line, and every diagnostic repeats its line.
pub const MAX_EXCERPT_CHARS: usize = 120;
/// Chars of context kept before the span when a line is cut.
const CONTEXT_BEFORE: usize = 40;
/// A message quotes what the user wrote (a key, a value); a 1 MB key must not
/// make a 1 MB message.
const MAX_MESSAGE_CHARS: usize = 1000;
const CUT: &str = "...";

/// `line`, cut to [`MAX_EXCERPT_CHARS`] around the span `[col0, col0 + len)`
/// (in chars) when longer, with `...` where text was cut; and where the
/// caret goes in it (1-based column, width).
pub(crate) fn excerpt(line: &str, col0: usize, len: usize) -> (String, usize, usize) {
    let total = line.chars().count();
    if total <= MAX_EXCERPT_CHARS {
        return (line.to_string(), col0 + 1, len);
    }
    let mut from = col0.saturating_sub(CONTEXT_BEFORE);
    let to = (from + MAX_EXCERPT_CHARS).min(total);
    // Near the end of the line, show more before the span instead.
    from = from.min(to - MAX_EXCERPT_CHARS);
    let mut text = String::with_capacity(MAX_EXCERPT_CHARS * 4 + 2 * CUT.len());
    if from > 0 {
        text.push_str(CUT);
    }
    text.extend(line.chars().skip(from).take(to - from));
    if to < total {
        text.push_str(CUT);
    }
    let lead = if from > 0 { CUT.len() } else { 0 };
    let caret_len = len.min(to.saturating_sub(col0)).max(1);
    (text, col0 - from + lead + 1, caret_len)
}

/// A `key_pem` written on one line (`"-----BEGIN PRIVATE KEY-----\nMIG..."`) would put key
/// material in an excerpt, and so in `weir check`'s output and a rejected reload's log line:
/// the excerpt stops after the PEM header.
fn hide_private_key(excerpt: &mut String) {
    const HEADER_END: &str = "PRIVATE KEY-----";
    if let Some(at) = excerpt.find(HEADER_END) {
        excerpt.truncate(at + HEADER_END.len());
        excerpt.push_str(" ... (the key is not shown)");
    }
}

fn cut_message(mut message: String) -> String {
    if let Some((at, _)) = message.char_indices().nth(MAX_MESSAGE_CHARS) {
        message.truncate(at);
        message.push_str(CUT);
    }
    message
}

/// ```text
/// weir.toml:12:1: error: unknown key `bnd`, did you mean `bind`?
///    12 | bnd = "0.0.0.0:8080"
///       | ^^^
/// ```
/// `FILE:LINE:COL: error: message`, then the line and a caret under the span.
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        render(self, f)
    }
}

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
        .take(d.caret_col.saturating_sub(1))
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    write!(
        f,
        "{:>width$} | {pad}{}",
        "",
        "^".repeat(d.caret_len.clamp(1, MAX_EXCERPT_CHARS))
    )
}
