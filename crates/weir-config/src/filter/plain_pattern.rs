//! Path regexes that are text around at most one run of "anything", such as `^/old/(.*)$` or
//! `^/(small)$`: the shape most rewrites and redirects have. Their matches are found by
//! comparing bytes instead of running the regex engine. The engine's one-pass search costs
//! about 850 instructions per request even for `^/(small)$`, most of a rewrite filter's cost.
//! The comparison is hand-written because no crate matches a parsed pattern this way. It is
//! taken only for the shapes below, and it is checked against the engine in the tests.
//!
//! The pattern is read by regex-syntax, the regex crate's own parser. So escapes, flags and
//! Unicode mean what they mean to the engine:
//! - `(?i)` text is a class, not literal text, and leaves the engine to match;
//! - `.` is any character but `\n`, or any character at all under `(?s)`.
//!
//! The shapes taken:
//! - the pattern starts with `^`;
//! - then literal text, each piece perhaps a capture group;
//! - at most one greedy `.*` or `.+`, perhaps a capture group;
//! - then `$`, or nothing. A run must be last when nothing ends the pattern: a run followed
//!   by text and no `$` leaves the engine to choose where the text is.

use regex_automata::util::primitives::NonMaxUsize;
use regex_syntax::hir::{Dot, Hir, HirKind, Look, Repetition};

#[derive(Debug)]
pub(super) struct Plain {
    parts: Vec<Part>,
    /// The pattern ends with `$`: a match reaches the end of the path.
    to_end: bool,
    /// The length of the text after the run, which the run leaves to it.
    after_run: usize,
}

#[derive(Debug)]
enum Part {
    Text {
        bytes: Box<[u8]>,
        group: Option<usize>,
    },
    /// `.*` (`min` 0) or `.+` (`min` 1).
    Run {
        min: usize,
        /// `(?s)`: `\n` is matched too.
        newlines: bool,
        group: Option<usize>,
    },
}

impl Plain {
    /// The pattern's plan, if it has one of the shapes above.
    pub(super) fn of(pattern: &str) -> Option<Plain> {
        let hir = regex_syntax::ParserBuilder::new()
            .build()
            .parse(pattern)
            .ok()?;
        let items = match hir.kind() {
            HirKind::Concat(items) => items.as_slice(),
            _ => std::slice::from_ref(&hir),
        };
        let (first, rest) = items.split_first()?;
        if *first.kind() != HirKind::Look(Look::Start) {
            return None;
        }
        let (to_end, middle) = match rest.split_last() {
            Some((last, middle)) if *last.kind() == HirKind::Look(Look::End) => (true, middle),
            _ => (false, rest),
        };
        let mut parts = Vec::with_capacity(middle.len());
        for h in middle {
            parts.push(match h.kind() {
                HirKind::Literal(l) => Part::Text {
                    bytes: l.0.clone(),
                    group: None,
                },
                HirKind::Repetition(r) => run(r, None)?,
                HirKind::Capture(c) => {
                    let group = Some(usize::try_from(c.index).ok()?);
                    match c.sub.kind() {
                        HirKind::Literal(l) => Part::Text {
                            bytes: l.0.clone(),
                            group,
                        },
                        HirKind::Repetition(r) => run(r, group)?,
                        _ => return None,
                    }
                }
                _ => return None,
            });
        }
        let runs: Vec<usize> = (0..parts.len())
            .filter(|&i| matches!(parts[i], Part::Run { .. }))
            .collect();
        let after_run = match runs.as_slice() {
            [] => 0,
            [i] if to_end || *i + 1 == parts.len() => parts[i + 1..]
                .iter()
                .map(|p| match p {
                    Part::Text { bytes, .. } => bytes.len(),
                    Part::Run { .. } => 0,
                })
                .sum(),
            _ => return None,
        };
        Some(Plain {
            parts,
            to_end,
            after_run,
        })
    }

    /// What the engine's `search_slots` finds in `s`: `false` when the pattern does not
    /// match; else `slots` hold each group's span (group 0 the whole match).
    pub(super) fn search(&self, s: &str, slots: &mut [Option<NonMaxUsize>]) -> bool {
        let b = s.as_bytes();
        let mut set = |group: Option<usize>, start: usize, end: usize| {
            if let Some(g) = group {
                if let Some(pair) = slots.get_mut(2 * g..2 * g + 2) {
                    pair[0] = NonMaxUsize::new(start);
                    pair[1] = NonMaxUsize::new(end);
                }
            }
        };
        let mut at = 0;
        for part in &self.parts {
            match part {
                Part::Text { bytes, group } => {
                    if !b[at..].starts_with(bytes) {
                        return false;
                    }
                    set(*group, at, at + bytes.len());
                    at += bytes.len();
                }
                Part::Run {
                    min,
                    newlines,
                    group,
                } => {
                    let end = match (self.to_end, *newlines) {
                        (true, _) => match b.len().checked_sub(self.after_run) {
                            Some(end) if end >= at => end,
                            _ => return false,
                        },
                        // Last, with nothing after: as far as it may go.
                        (false, true) => b.len(),
                        (false, false) => b[at..]
                            .iter()
                            .position(|&c| c == b'\n')
                            .map_or(b.len(), |i| at + i),
                    };
                    if end - at < *min || (!newlines && b[at..end].contains(&b'\n')) {
                        return false;
                    }
                    set(*group, at, end);
                    at = end;
                }
            }
        }
        if self.to_end && at != b.len() {
            return false;
        }
        set(Some(0), 0, at);
        true
    }
}

/// A greedy `.*` or `.+`, as a run.
fn run(r: &Repetition, group: Option<usize>) -> Option<Part> {
    if !r.greedy || r.max.is_some() || r.min > 1 {
        return None;
    }
    let sub: &Hir = &r.sub;
    let newlines = if *sub == Hir::dot(Dot::AnyCharExceptLF) {
        false
    } else if *sub == Hir::dot(Dot::AnyChar) {
        true
    } else {
        return None;
    };
    Some(Part::Run {
        min: r.min as usize,
        newlines,
        group,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex_automata::meta::Regex;
    use regex_automata::Input;

    fn slots(re: &Regex) -> Vec<Option<NonMaxUsize>> {
        vec![None; re.group_info().slot_len()]
    }

    /// For every pattern with a plan, on every path, the plan finds what the engine finds.
    #[test]
    fn plans_find_what_the_engine_finds() {
        let planned = [
            "^/(small)$",
            "^/small$",
            "^/small",
            "^/old/(.*)$",
            "^/old/(?P<rest>.*)$",
            "^/old/(.+)$",
            "^/old/(.*)",
            "^/old/.*$",
            "^/(.*)/end$",
            "^/(.*)\\.html$",
            "^/a(b)c(.*)$",
            "^(?s)/x(.*)$",
            "^/x(.+)",
            "^/é/(.*)$",
            "^$",
            "^",
        ];
        let paths = [
            "",
            "/",
            "/small",
            "/smaller",
            "/small/",
            "/old/",
            "/old/a/b",
            "/old",
            "/oldx",
            "/a/end",
            "/end",
            "/x/y/end",
            "/page.html",
            "/.html",
            "/abc",
            "/abcdef",
            "/ab",
            "/x\ny",
            "/old/a\nb",
            "/xa",
            "/x",
            "/é/ü",
            "/é",
            "//end",
        ];
        for pattern in planned {
            let plan = Plain::of(pattern).unwrap_or_else(|| panic!("{pattern}: no plan"));
            let re = Regex::new(pattern).unwrap();
            for path in paths {
                let mut want = slots(&re);
                let matched = re.search_slots(&Input::new(path), &mut want).is_some();
                let mut got = slots(&re);
                let found = plan.search(path, &mut got);
                assert_eq!(found, matched, "{pattern} on {path:?}");
                if matched {
                    assert_eq!(got, want, "{pattern} on {path:?}");
                }
            }
        }
    }

    /// Anything else is left to the engine.
    #[test]
    fn other_shapes_have_no_plan() {
        for pattern in [
            "/old/(.*)$",
            "^(?i)/small$",
            "^/(a|b)$",
            "^/v(\\d+)/(.*)$",
            "^/(.*)/(.*)$",
            "^/(.*)/end",
            "^/(.*?)$",
            "^/(.{2,})$",
            "^/(x)?$",
            "^/((a))$",
            "^/a$|^/b$",
            "(?m)^/a$",
        ] {
            assert!(Plain::of(pattern).is_none(), "{pattern}");
        }
    }
}
