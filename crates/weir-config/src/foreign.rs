//! A file in another format than TOML (an nginx config, YAML) given to weir: recognized on
//! the lines TOML could not parse, so that the first thing said is that weir reads TOML and
//! where to start, not only TOML's own errors about the file's every line.

use std::ops::Range;

/// Where to say it (the first line in that format, its first word) and what, when most of
/// the lines with a syntax error look like one other format.
pub(crate) fn hint(src: &str, error_offsets: &[usize]) -> Option<(Range<usize>, String)> {
    let mut lines: Vec<usize> = error_offsets.iter().map(|&o| line_start(src, o)).collect();
    lines.sort_unstable();
    lines.dedup();
    let (mut nginx, mut yaml) = (Vec::new(), Vec::new());
    // A closing brace says nothing of the format (nginx, JSON, a broken inline table).
    lines.retain(|&start| src[start..].lines().next().unwrap_or_default().trim() != "}");
    for &start in &lines {
        let line = src[start..].lines().next().unwrap_or_default();
        let indent = line.len() - line.trim_start().len();
        if let Some(word) = nginx_directive(line) {
            nginx.push(start + indent..start + indent + word);
        } else if let Some(word) = yaml_key(line) {
            yaml.push(start + indent..start + indent + word);
        }
    }
    // A majority of the broken lines, so one stray line in a TOML file says nothing.
    let (found, message) = if nginx.len() >= yaml.len() {
        (nginx, NGINX)
    } else {
        (yaml, YAML)
    };
    if found.is_empty() || found.len() * 2 < lines.len() {
        return None;
    }
    Some((found[0].clone(), message.to_string()))
}

const NGINX: &str = "this looks like nginx configuration (`directive value;`, `block {`), but \
    weir reads TOML: start from examples/basic.toml (examples/ has more), and find every key \
    in docs/CONFIG.md";

const YAML: &str = "this looks like YAML (`key: value`), but weir reads TOML, where a key is \
    set with `key = value` and a section is a `[table]`: start from examples/basic.toml \
    (examples/ has more), and find every key in docs/CONFIG.md";

fn line_start(src: &str, offset: usize) -> usize {
    let mut offset = offset.min(src.len());
    while !src.is_char_boundary(offset) {
        offset -= 1;
    }
    src[..offset].rfind('\n').map_or(0, |i| i + 1)
}

/// `name args;` or `name args {` (nginx's directive and block), never `name = ...`: the
/// length of `name`.
fn nginx_directive(line: &str) -> Option<usize> {
    let code = line.split('#').next().unwrap_or_default().trim();
    if !(code.ends_with(';') || code.ends_with('{')) {
        return None;
    }
    let word = bare_word(code)?;
    let rest = code[word..].trim_start();
    (code[word..].starts_with(char::is_whitespace) && !rest.starts_with('=')).then_some(word)
}

/// `key:` or `- key:` followed by a space or the line's end, or `---`: the length of what
/// is pointed at.
fn yaml_key(line: &str) -> Option<usize> {
    let code = line.trim();
    if code == "---" {
        return Some(3);
    }
    let item = code.strip_prefix("- ").map_or(0, |_| 2);
    let key = bare_word(&code[item..])?;
    let after = &code[item + key..];
    let colon = after.strip_prefix(':')?;
    (colon.is_empty() || colon.starts_with(' ')).then_some(item + key)
}

/// The length of the leading `[A-Za-z_][A-Za-z0-9_.-]*`, if any.
fn bare_word(s: &str) -> Option<usize> {
    let first = s.chars().next()?;
    if !(first.is_ascii_alphabetic() || first == '_') {
        return None;
    }
    Some(
        s.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
            .unwrap_or(s.len()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offsets_of_lines(src: &str) -> Vec<usize> {
        std::iter::once(0)
            .chain(src.match_indices('\n').map(|(i, _)| i + 1))
            .filter(|&i| i < src.len())
            .collect()
    }

    #[test]
    fn nginx_lines_are_recognized_but_not_toml_with_a_semicolon() {
        assert_eq!(nginx_directive("    server 127.0.0.1:9001;"), Some(6));
        assert_eq!(nginx_directive("location / {  # the root"), Some(8));
        assert_eq!(nginx_directive("pool = \"app\";"), None);
        assert_eq!(nginx_directive("}"), None);
    }

    #[test]
    fn yaml_keys_are_recognized_but_not_toml_keys() {
        assert_eq!(yaml_key("listeners:"), Some(9));
        assert_eq!(yaml_key("  - addr: 127.0.0.1:9001"), Some(6));
        assert_eq!(yaml_key("bind = \"127.0.0.1:80\""), None);
        assert_eq!(yaml_key("addr:9001"), None);
    }

    #[test]
    fn the_hint_points_at_the_first_line_in_that_format() {
        let src = "# site\nupstream app {\n  server a;\n}\n";
        let (span, msg) = hint(src, &offsets_of_lines(src)[1..]).unwrap();
        assert_eq!(&src[span], "upstream");
        assert!(msg.starts_with("this looks like nginx"));
    }

    #[test]
    fn a_minority_of_foreign_looking_lines_says_nothing() {
        let src = "a = [\nb: c\n\"x\n'y\n";
        assert!(hint(src, &offsets_of_lines(src)).is_none());
    }
}
