//! A path regex and its replacement (`path_regex`, `path_replacement`), shared by rewrite and
//! redirect. The `regex` crate matches in linear time; the compiled program is bounded too, so
//! no pattern costs weir more than `MAX_PROGRAM` of memory per use.

use std::borrow::Cow;

use regex_automata::meta::{self, Regex};
use regex_automata::util::primitives::NonMaxUsize;
use regex_automata::{Input, PatternID};

use super::plain_pattern::Plain;
use crate::read::{self, Fields, Sink};

/// The longest pattern taken, in bytes.
pub const MAX_PATTERN: usize = 1024;
/// The most memory one compiled pattern (and its lazy DFA) may take.
pub const MAX_PROGRAM: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRegex {
    pub pattern: String,
    /// `$1`, `${name}` stand for captures; `$$` for a dollar.
    pub replacement: String,
}

impl PathRegex {
    /// The pattern compiled, with its replacement taken apart: what a filter runs.
    pub fn compiled(&self) -> Result<PathRewrite, String> {
        let re = Self::compile(&self.pattern)?;
        let with = Replacement::parse(&re, &self.replacement)?;
        let plain = Plain::of(&self.pattern);
        Ok(PathRewrite { re, plain, with })
    }

    /// The compiled pattern, with the limits every user of it must apply (the `regex` crate's
    /// defaults otherwise, and its messages).
    pub fn compile(pattern: &str) -> Result<Regex, String> {
        if pattern.len() > MAX_PATTERN {
            return Err(format!(
                "the pattern is {} bytes; at most {MAX_PATTERN} are taken",
                pattern.len()
            ));
        }
        let limits = meta::Config::new()
            .nfa_size_limit(Some(MAX_PROGRAM))
            .onepass_size_limit(Some(MAX_PROGRAM))
            .dfa_size_limit(Some(MAX_PROGRAM))
            .hybrid_cache_capacity(MAX_PROGRAM);
        meta::Builder::new()
            .configure(limits)
            .build(pattern)
            .map_err(|e| match (e.size_limit(), e.syntax_error()) {
                (Some(_), _) => format!(
                    "the pattern compiles to more than {} KiB; make it simpler",
                    MAX_PROGRAM / 1024
                ),
                (None, Some(syntax)) => syntax.to_string(),
                (None, None) => e.to_string(),
            })
    }
}

/// A path regex with its replacement, ready to run on requests.
#[derive(Debug)]
pub struct PathRewrite {
    re: Regex,
    /// Set when the pattern is text around at most one `.*`: matched without the engine.
    plain: Option<Plain>,
    with: Replacement,
}

/// Capture slots a search keeps on the stack: two per group, for up to 16 groups (more take
/// a `Vec`).
const STACK_SLOTS: usize = 32;

impl PathRewrite {
    /// `s` with the first match replaced (what `Regex::replace` gives), or `None` when the
    /// pattern does not match. A capture that took part in no match stands for nothing. When
    /// the replacement gives `s` back, it is `s` itself, not a copy: a rewrite that leaves most
    /// paths as they are does not allocate for them.
    pub fn apply<'s>(&self, s: &'s str) -> Option<Cow<'s, str>> {
        let n = self.re.group_info().slot_len();
        let mut stack = [None; STACK_SLOTS];
        let mut heap = Vec::new();
        let slots: &mut [Option<NonMaxUsize>] = match n <= STACK_SLOTS {
            true => &mut stack[..n],
            false => {
                heap.resize(n, None);
                &mut heap
            }
        };
        let found = match &self.plain {
            Some(plain) => plain.search(s, slots),
            None => self.re.search_slots(&Input::new(s), slots).is_some(),
        };
        if !found {
            return None;
        }
        let slots = &*slots;
        let span = |i: usize| {
            let at = |j: usize| slots.get(j).copied().flatten().map(NonMaxUsize::get);
            Some((at(2 * i)?, at(2 * i + 1)?))
        };
        let (start, end) = span(0)?;
        fn piece<'a>(
            p: &'a Piece,
            s: &'a str,
            span: impl Fn(usize) -> Option<(usize, usize)>,
        ) -> &'a str {
            match p {
                Piece::Text(t) => t,
                Piece::Capture(i) => span(*i).map_or("", |(a, b)| &s[a..b]),
            }
        }
        let text = |p| piece(p, s, span);
        // The replacement, compared with what it replaces before anything is built.
        let mut rest = &s[start..end];
        let same = self
            .with
            .0
            .iter()
            .all(|p| match rest.strip_prefix(text(p)) {
                Some(r) => {
                    rest = r;
                    true
                }
                None => false,
            })
            && rest.is_empty();
        if same {
            return Some(Cow::Borrowed(s));
        }
        let mut out = String::with_capacity(s.len() + 16);
        out.push_str(&s[..start]);
        for p in &self.with.0 {
            out.push_str(text(p));
        }
        out.push_str(&s[end..]);
        Some(Cow::Owned(out))
    }
}

/// The names of `re`'s groups, by index (`None` for an unnamed one).
fn names(re: &Regex) -> impl Iterator<Item = Option<&str>> {
    re.group_info().pattern_names(PatternID::ZERO)
}

/// Reads `path_regex` with `path_replacement` (both or neither).
pub(super) fn read(sink: &mut Sink<'_>, t: &Fields<'_, '_>) -> Option<PathRegex> {
    let pat = t.get("path_regex");
    let rep = t.get("path_replacement");
    let (pat, rep) = match (pat, rep) {
        (None, None) => return None,
        (Some(p), Some(r)) => (p, r),
        (Some(p), None) => {
            sink.error(
                p.span(),
                "path_regex needs a path_replacement, e.g. \"/new/$1\"",
            );
            return None;
        }
        (None, Some(r)) => {
            sink.error(r.span(), "path_replacement needs a path_regex to match");
            return None;
        }
    };
    let p = read::string(sink, pat)?;
    let r = read::string(sink, rep)?;
    let re = match PathRegex::compile(p) {
        Ok(re) => re,
        Err(e) => {
            sink.error(pat.span(), format!("invalid path_regex: {e}"));
            return None;
        }
    };
    if let Err(e) = Replacement::parse(&re, r) {
        sink.error(rep.span(), format!("invalid path_replacement {r:?}: {e}"));
        return None;
    }
    Some(PathRegex {
        pattern: p.to_string(),
        replacement: r.to_string(),
    })
}

/// A `path_replacement` taken apart once, at load: its text and the captures it names, by
/// index. `Regex::replace` would parse the `$` references again on every request (a third of
/// a rewrite's cost), and quietly put nothing where a name is not a capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement(Vec<Piece>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Capture(usize),
}

impl Replacement {
    /// Every `$N` / `${name}` must name a capture of `re` (`$$` is a dollar; a name runs as
    /// far as letters, digits and `_` go, as the `regex` crate reads it), and the text must
    /// be what a path may hold.
    pub fn parse(re: &Regex, r: &str) -> Result<Replacement, String> {
        if let Some(c) = r.chars().find(|c| {
            c.is_whitespace() || c.is_control() || matches!(c, '?' | '#') || !c.is_ascii()
        }) {
            return Err(format!("{c:?} cannot be in a path"));
        }
        let mut pieces = Vec::new();
        let mut text = String::new();
        let mut rest = r;
        while let Some(i) = rest.find('$') {
            text.push_str(&rest[..i]);
            let tail = &rest[i + 1..];
            if let Some(t) = tail.strip_prefix('$') {
                text.push('$');
                rest = t;
                continue;
            }
            let (name, after) = match tail.strip_prefix('{') {
                Some(t) => match t.find('}') {
                    Some(end) => (&t[..end], &t[end + 1..]),
                    None => return Err("`${` without its `}`".into()),
                },
                None => {
                    let end = tail
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(tail.len());
                    if end == 0 {
                        return Err("a lone `$`: write `$$` for a dollar".into());
                    }
                    (&tail[..end], &tail[end..])
                }
            };
            let index = match name.parse::<usize>() {
                Ok(n) => (n < re.captures_len()).then_some(n),
                Err(_) => names(re).position(|n| n == Some(name)),
            };
            let Some(index) = index else {
                return Err(format!(
                    "`${name}` is not a capture of path_regex (its numbered groups: {}{})",
                    re.captures_len() - 1,
                    match names(re).flatten().collect::<Vec<_>>() {
                        names if names.is_empty() => String::new(),
                        names => format!(", named: {}", names.join(", ")),
                    }
                ));
            };
            if !text.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut text)));
            }
            pieces.push(Piece::Capture(index));
            rest = after;
        }
        text.push_str(rest);
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        Ok(Replacement(pieces))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever the replacement, `apply` gives what `Regex::replace` gives.
    #[test]
    fn apply_replaces_as_the_regex_crate_does() {
        let cases = [
            ("^/old/(?P<rest>.*)$", "/new/${rest}", "/old/a/b"),
            ("^/(small)$", "/$1", "/small"),
            ("/v(\\d+)/", "/version-$1/$$/", "/api/v2/x/v3/"),
            ("^/a(x)?/(.*)$", "/$1-$2-$0", "/a/rest"),
            (
                "^/(?P<a>[a-z]+)-(?P<b>[a-z]+)$",
                "/${b}_${a}/$a$b",
                "/left-right",
            ),
            ("^/nomatch$", "/x", "/other"),
            ("^/(a)(b)?$", "/$1$2", "/a"),
            ("^/(a)(b)?$", "/$1$2", "/ab"),
            ("/(x+)", "/${1}y", "/xx/x"),
            ("/(x+)", "/$1", "/xx/x"),
        ];
        for (pattern, with, path) in cases {
            let rewrite = PathRegex {
                pattern: pattern.into(),
                replacement: with.into(),
            }
            .compiled()
            .unwrap();
            let re = ::regex::Regex::new(pattern).unwrap();
            let want = re
                .is_match(path)
                .then(|| re.replace(path, with).into_owned());
            let got = rewrite.apply(path);
            assert_eq!(got.as_deref(), want.as_deref(), "{pattern} {with} {path}");
            // Borrowed exactly when nothing changed.
            let unchanged = matches!(got, Some(Cow::Borrowed(_)));
            assert_eq!(
                unchanged,
                want.as_deref() == Some(path),
                "{pattern} {with} {path}"
            );
        }
    }

    #[test]
    fn replacements_name_captures_that_exist() {
        let re = PathRegex::compile("^/old/(?P<rest>.*)$").unwrap();
        assert!(Replacement::parse(&re, "/new/$1").is_ok());
        assert!(Replacement::parse(&re, "/new/${rest}x").is_ok());
        assert!(Replacement::parse(&re, "/$$/$0").is_ok());
        assert!(Replacement::parse(&re, "/new/$2")
            .unwrap_err()
            .contains("numbered groups: 1"));
        assert!(Replacement::parse(&re, "/new/$").is_err());
        assert!(Replacement::parse(&re, "/new/$rests").is_err());
        assert!(Replacement::parse(&re, "/a b").is_err());
        assert!(PathRegex::compile(&"a".repeat(2000)).is_err());
        assert!(PathRegex::compile("(\\w{100}){100}")
            .unwrap_err()
            .contains("KiB"));
    }
}
