//! Typed readers over the spanned TOML tree. Each reader either returns a
//! value or records an error at the value's span and returns `None`; callers
//! then keep the default and carry on, so one bad value never hides the next.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::ops::{Range, RangeInclusive};
use std::time::Duration;

use toml::de::{DeArray, DeTable, DeValue};
use toml::Spanned;

use crate::diagnostic::{Diagnostic, Omitted, Severity, MAX_DIAGNOSTICS};
use crate::span::SourceMap;
use crate::{addr, duration, suggest};

pub(crate) type Span = Range<usize>;
pub(crate) type Val<'i> = Spanned<DeValue<'i>>;

/// A diagnostic as found: where and what. It becomes a [`Diagnostic`] (line,
/// column, source excerpt) only if it is among those shown.
struct Found {
    severity: Severity,
    span: Span,
    message: String,
}

/// Collects diagnostics for one source: a file, whose spans are byte ranges of its text, or
/// API resources, whose spans are keys into a table of field paths (`json.rs`), so that every
/// reader and rule reports the same way for both.
pub(crate) struct Sink<'s> {
    map: Option<&'s SourceMap<'s>>,
    syntax: Vec<Found>,
    /// The lines with a syntax error: nothing else is reported on them.
    broken: HashSet<usize>,
    found: Vec<Found>,
}

impl<'s> Sink<'s> {
    pub(crate) fn new(map: &'s SourceMap<'s>) -> Self {
        Sink {
            map: Some(map),
            syntax: Vec::new(),
            broken: HashSet::new(),
            found: Vec::new(),
        }
    }

    /// A sink for resources read from JSON: spans are field-path keys, there is no text.
    pub(crate) fn for_fields() -> Self {
        Sink {
            map: None,
            syntax: Vec::new(),
            broken: HashSet::new(),
            found: Vec::new(),
        }
    }

    pub(crate) fn syntax(&mut self, span: Span, msg: impl Into<String>) {
        self.broken.insert(self.line_of(span.start));
        self.syntax.push(Found {
            severity: Severity::Error,
            span,
            message: msg.into(),
        });
    }

    pub(crate) fn error(&mut self, span: Span, msg: impl Into<String>) {
        self.push(Severity::Error, span, msg.into());
    }

    /// How many errors were reported so far (a reader compares before and after).
    pub(crate) fn errors(&self) -> usize {
        self.syntax.len()
            + self
                .found
                .iter()
                .filter(|f| f.severity == Severity::Error)
                .count()
    }

    pub(crate) fn warn(&mut self, span: Span, msg: impl Into<String>) {
        self.push(Severity::Warning, span, msg.into());
    }

    fn push(&mut self, severity: Severity, span: Span, message: String) {
        self.found.push(Found {
            severity,
            span,
            message,
        });
    }

    /// The line of `offset` in a file; 0 for resources, which have no lines.
    pub(crate) fn line_of(&self, offset: usize) -> usize {
        self.map.map_or(0, |m| m.line_of(offset))
    }

    /// Whether what is reported at `offset` would be dropped for a syntax
    /// error on its line (all syntax errors are known before anything else).
    pub(crate) fn on_broken_line(&self, offset: usize) -> bool {
        self.map.is_some() && self.broken.contains(&self.line_of(offset))
    }

    /// The errors of resources read from JSON, each with the field path its span stands for,
    /// in the order of their spans (the order the paths were made in). Warnings are dropped:
    /// the API has nowhere to show them.
    pub(crate) fn finish_fields(
        self,
        path: impl Fn(usize) -> Option<String>,
    ) -> Vec<(Option<String>, String)> {
        let mut errors: Vec<Found> = self
            .found
            .into_iter()
            .filter(|f| f.severity == Severity::Error)
            .collect();
        errors.sort_by_key(|f| f.span.start);
        errors.dedup_by(|a, b| a.span.start == b.span.start && a.message == b.message);
        errors
            .into_iter()
            .map(|f| (path(f.span.start), f.message))
            .collect()
    }

    /// The first [`MAX_DIAGNOSTICS`], errors first, each group in source
    /// order, and how many more there were. The parser recovers from a syntax
    /// error with a placeholder value; anything we say about that line would be
    /// noise on top of the real problem, so drop it.
    pub(crate) fn finish(self) -> (Vec<Diagnostic>, Omitted) {
        let map = self.map.expect("a file's sink has its text");
        // A byte offset, clamped, stands for its line and column: sorting and
        // comparing offsets never walks a line, however many diagnostics share it.
        let at = |f: &Found| map.clamp(f.span.start);
        let broken = self.broken;
        // A value that is wrong gets its error, not also a "has no effect yet".
        let errors_at: HashSet<usize> = self
            .found
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .map(at)
            .collect();
        let mut all: Vec<Found> = self.syntax;
        all.extend(self.found.into_iter().filter(|f| {
            !broken.contains(&map.line_of(at(f)))
                && (f.severity == Severity::Error || !errors_at.contains(&at(f)))
        }));
        all.sort_by_key(|f| (f.severity == Severity::Warning, at(f)));
        all.dedup_by(|a, b| {
            a.severity == b.severity
                && at(a) == at(b)
                && map.end_on_line(a.span.clone()) == map.end_on_line(b.span.clone())
                && a.message == b.message
        });
        let mut omitted = Omitted::default();
        for f in all.iter().skip(MAX_DIAGNOSTICS) {
            match f.severity {
                Severity::Error => omitted.errors += 1,
                Severity::Warning => omitted.warnings += 1,
            }
        }
        all.truncate(MAX_DIAGNOSTICS);
        let shown = all
            .into_iter()
            .map(|f| map.diagnostic(f.severity, f.span, f.message))
            .collect();
        (shown, omitted)
    }
}

/// "a string", "an integer", ... for "expected X, found Y" messages.
pub(crate) fn a_type(v: &DeValue<'_>) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date-time",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

pub(crate) fn wrong_type(sink: &mut Sink<'_>, v: &Val<'_>, expected: &str) {
    sink.error(
        v.span(),
        format!("expected {expected}, found {}", a_type(v.get_ref())),
    );
}

pub(crate) fn table<'a, 'i>(sink: &mut Sink<'_>, v: &'a Val<'i>) -> Option<Fields<'a, 'i>> {
    match v.get_ref() {
        DeValue::Table(map) => Some(Fields {
            map,
            span: v.span(),
        }),
        _ => {
            wrong_type(sink, v, "a table");
            None
        }
    }
}

pub(crate) fn array<'a, 'i>(sink: &mut Sink<'_>, v: &'a Val<'i>) -> Option<&'a DeArray<'i>> {
    match v.get_ref() {
        DeValue::Array(a) => Some(a),
        _ => {
            wrong_type(sink, v, "an array");
            None
        }
    }
}

pub(crate) fn string<'a>(sink: &mut Sink<'_>, v: &'a Val<'_>) -> Option<&'a str> {
    match v.get_ref() {
        DeValue::String(s) => Some(s),
        _ => {
            wrong_type(sink, v, "a string");
            None
        }
    }
}

/// The integer's value, if it fits an i64 (TOML allows nothing larger).
pub(crate) fn integer_value(v: &DeValue<'_>) -> Option<i64> {
    match v {
        DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix()).ok(),
        _ => None,
    }
}

/// A table and its span, read key by key.
pub(crate) struct Fields<'a, 'i> {
    pub map: &'a DeTable<'i>,
    /// The whole table: its `[header]`, or the inline `{ ... }`.
    pub span: Span,
}

impl<'a, 'i> Fields<'a, 'i> {
    pub(crate) fn get(&self, key: &str) -> Option<&'a Val<'i>> {
        self.map.get(key)
    }

    /// Span of the key itself (for "this table" or "this name" errors).
    pub(crate) fn key_span(&self, key: &str) -> Option<Span> {
        self.map.get_key_value(key).map(|(k, _)| k.span())
    }

    /// Entries in source order (the map itself is sorted by name).
    pub(crate) fn entries(&self) -> Vec<(&'a str, Span, &'a Val<'i>)> {
        let mut v: Vec<_> = self
            .map
            .iter()
            .map(|(k, v)| (k.get_ref().as_ref(), k.span(), v))
            .collect();
        v.sort_by_key(|(_, span, _)| span.start);
        v
    }

    /// Reports every key not in `known`, with a suggestion when one is close.
    pub(crate) fn check_keys(&self, sink: &mut Sink<'_>, known: &[&str]) {
        for (key, span, _) in self.entries() {
            if known.contains(&key) {
                continue;
            }
            let msg = match suggest::closest(key, known.iter().copied()) {
                Some(s) => format!("unknown key `{key}`, did you mean `{s}`?"),
                None => format!(
                    "unknown key `{key}` (expected one of: {})",
                    known.join(", ")
                ),
            };
            sink.error(span, msg);
        }
    }

    /// A required key: reports its absence at the table's span.
    pub(crate) fn require(
        &self,
        sink: &mut Sink<'_>,
        key: &str,
        what: &str,
        example: &str,
    ) -> Option<&'a Val<'i>> {
        let v = self.get(key);
        // A misspelt key (`bnd`) is already reported with a suggestion;
        // "has no `bind`" on top would be the same mistake twice.
        let misspelt = || {
            self.map
                .keys()
                .any(|k| k.get_ref() != key && suggest::closest(k.get_ref(), [key]).is_some())
        };
        if v.is_none() && !misspelt() {
            sink.error(
                self.span.clone(),
                format!("{what} has no `{key}`; add e.g. {key} = {example}"),
            );
        }
        v
    }

    /// An integer within `range`, converted to the model's type.
    pub(crate) fn int<T: TryFrom<i64>>(
        &self,
        sink: &mut Sink<'_>,
        key: &str,
        range: RangeInclusive<i64>,
    ) -> Option<T> {
        let v = self.get(key)?;
        int_value(sink, v, key, range)
    }

    /// A duration; `positive` rejects zero (a zero timeout would fail every try).
    pub(crate) fn duration(
        &self,
        sink: &mut Sink<'_>,
        key: &str,
        positive: bool,
    ) -> Option<Duration> {
        let v = self.get(key)?;
        let Some(s) = v.get_ref().as_str() else {
            sink.error(
                v.span(),
                format!(
                    "expected a duration string like \"5s\", found {}",
                    a_type(v.get_ref())
                ),
            );
            return None;
        };
        match duration::parse(s) {
            Ok(d) if positive && d.is_zero() => {
                sink.error(v.span(), format!("{key} must be greater than 0"));
                None
            }
            Ok(d) => Some(d),
            Err(e) => {
                sink.error(v.span(), e);
                None
            }
        }
    }

    pub(crate) fn addr(
        &self,
        sink: &mut Sink<'_>,
        key: &str,
        usage: addr::Use,
    ) -> Option<SocketAddr> {
        let v = self.get(key)?;
        addr_value(sink, v, usage)
    }

    /// One of a fixed set of words, e.g. `protocol = "http"`.
    pub(crate) fn choice<T: Copy>(
        &self,
        sink: &mut Sink<'_>,
        key: &str,
        options: &[(&str, T)],
    ) -> Option<T> {
        let v = self.get(key)?;
        let s = string(sink, v)?;
        if let Some((_, t)) = options.iter().find(|(name, _)| *name == s) {
            return Some(*t);
        }
        let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
        let hint = suggest::did_you_mean(s, names.iter().copied());
        sink.error(
            v.span(),
            format!(
                "invalid {key} \"{s}\"{hint} (expected one of: {})",
                names.join(", ")
            ),
        );
        None
    }
}

pub(crate) fn int_value<T: TryFrom<i64>>(
    sink: &mut Sink<'_>,
    v: &Val<'_>,
    key: &str,
    range: RangeInclusive<i64>,
) -> Option<T> {
    let Some(n) = integer_value(v.get_ref()) else {
        if v.get_ref().is_integer() {
            sink.error(
                v.span(),
                format!(
                    "{key} is out of range ({}..={})",
                    range.start(),
                    range.end()
                ),
            );
        } else {
            wrong_type(sink, v, "an integer");
        }
        return None;
    };
    if !range.contains(&n) {
        sink.error(
            v.span(),
            format!(
                "{key} = {n} is out of range; it must be between {} and {}",
                range.start(),
                range.end()
            ),
        );
        return None;
    }
    T::try_from(n).ok()
}

pub(crate) fn addr_value(sink: &mut Sink<'_>, v: &Val<'_>, usage: addr::Use) -> Option<SocketAddr> {
    let s = string(sink, v)?;
    match addr::parse(s, usage) {
        Ok(a) => Some(a),
        Err(e) => {
            sink.error(v.span(), e);
            None
        }
    }
}

/// The number of items, if `v` is an array.
pub(crate) fn array_len(v: &Val<'_>) -> Option<usize> {
    match v.get_ref() {
        DeValue::Array(a) => Some(a.len()),
        _ => None,
    }
}

/// A size in bytes: an integer, or a string with a unit (`"512KiB"`, `"10MiB"`, `"1GB"`;
/// `k`, `m`, `g` alone are binary, as nginx reads them).
pub(crate) fn size(v: &Val<'_>) -> Result<u64, String> {
    if let Some(n) = integer_value(v.get_ref()) {
        return u64::try_from(n).map_err(|_| format!("{n} is negative"));
    }
    let DeValue::String(s) = v.get_ref() else {
        return Err(format!(
            "expected a size like \"10MiB\" or an integer, found {}",
            a_type(v.get_ref())
        ));
    };
    let s = s.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(digits);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size like \"10MiB\""))?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" | "k" | "K" => 1 << 10,
        "MiB" | "m" | "M" => 1 << 20,
        "GiB" | "g" | "G" => 1 << 30,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        u => {
            return Err(format!(
                "unknown unit {u:?} (use B, KiB, MiB, GiB, KB, MB or GB)"
            ))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("{s:?} is too large"))
}
