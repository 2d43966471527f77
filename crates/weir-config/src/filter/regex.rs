//! A path regex and its replacement (`path_regex`, `path_replacement`), shared by rewrite and
//! redirect. The `regex` crate matches in linear time; the compiled program is bounded too, so
//! no pattern costs weir more than `MAX_PROGRAM` of memory per use.

use ::regex::{Regex, RegexBuilder};

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
    /// The pattern compiled, with its replacement: what a filter runs.
    pub fn compiled(&self) -> Result<(Regex, String), String> {
        Ok((Self::compile(&self.pattern)?, self.replacement.clone()))
    }

    /// The compiled pattern, with the limits every user of it must apply.
    pub fn compile(pattern: &str) -> Result<Regex, String> {
        if pattern.len() > MAX_PATTERN {
            return Err(format!(
                "the pattern is {} bytes; at most {MAX_PATTERN} are taken",
                pattern.len()
            ));
        }
        RegexBuilder::new(pattern)
            .size_limit(MAX_PROGRAM)
            .dfa_size_limit(MAX_PROGRAM)
            .build()
            .map_err(|e| match e {
                ::regex::Error::CompiledTooBig(_) => format!(
                    "the pattern compiles to more than {} KiB; make it simpler",
                    MAX_PROGRAM / 1024
                ),
                e => e.to_string(),
            })
    }
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
    if let Err(e) = check_replacement(&re, r) {
        sink.error(rep.span(), format!("invalid path_replacement {r:?}: {e}"));
        return None;
    }
    Some(PathRegex {
        pattern: p.to_string(),
        replacement: r.to_string(),
    })
}

/// Every `$N` / `${name}` names a capture of the pattern (the `regex` crate would quietly put
/// nothing there), and the text is what a path may hold.
fn check_replacement(re: &Regex, r: &str) -> Result<(), String> {
    if let Some(c) = r
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || matches!(c, '?' | '#') || !c.is_ascii())
    {
        return Err(format!("{c:?} cannot be in a path"));
    }
    let mut rest = r;
    while let Some(i) = rest.find('$') {
        let tail = &rest[i + 1..];
        if let Some(t) = tail.strip_prefix('$') {
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
        let known = match name.parse::<usize>() {
            Ok(n) => n < re.captures_len(),
            Err(_) => re.capture_names().flatten().any(|n| n == name),
        };
        if !known {
            return Err(format!(
                "`${name}` is not a capture of path_regex (its numbered groups: {}{})",
                re.captures_len() - 1,
                match re.capture_names().flatten().collect::<Vec<_>>() {
                    names if names.is_empty() => String::new(),
                    names => format!(", named: {}", names.join(", ")),
                }
            ));
        }
        rest = after;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replacements_name_captures_that_exist() {
        let re = PathRegex::compile("^/old/(?P<rest>.*)$").unwrap();
        assert!(check_replacement(&re, "/new/$1").is_ok());
        assert!(check_replacement(&re, "/new/${rest}x").is_ok());
        assert!(check_replacement(&re, "/$$/$0").is_ok());
        assert!(check_replacement(&re, "/new/$2")
            .unwrap_err()
            .contains("numbered groups: 1"));
        assert!(check_replacement(&re, "/new/$").is_err());
        assert!(check_replacement(&re, "/a b").is_err());
        assert!(PathRegex::compile(&"a".repeat(2000)).is_err());
        assert!(PathRegex::compile("(\\w{100}){100}")
            .unwrap_err()
            .contains("KiB"));
    }
}
