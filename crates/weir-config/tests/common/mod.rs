// Shared by the integration tests (each includes it with `mod common;`).
#![allow(dead_code)]

use weir_config::{parse_str, Diagnostic, Loaded, Severity};

/// Parses a source that must be valid.
pub fn ok(src: &str) -> Loaded {
    match parse_str(src, "t.toml") {
        Ok(l) => l,
        Err(e) => panic!("expected a valid config, got:\n{e}"),
    }
}

/// Every diagnostic of a source that must be invalid.
pub fn diags(src: &str) -> Vec<Diagnostic> {
    match parse_str(src, "t.toml") {
        Ok(_) => panic!("expected errors for:\n{src}"),
        Err(e) => e.list,
    }
}

/// The errors only, as (line, col, message).
pub fn errors(src: &str) -> Vec<(usize, usize, String)> {
    diags(src)
        .into_iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| (d.line, d.col, d.message))
        .collect()
}

/// Exactly one error, at `line:col`, whose message contains `needle`.
pub fn one_error(src: &str, line: usize, col: usize, needle: &str) {
    let errs = errors(src);
    assert_eq!(errs.len(), 1, "expected one error, got {errs:#?}");
    let (l, c, msg) = &errs[0];
    assert_eq!((*l, *c), (line, col), "wrong position for {msg:?}");
    assert!(msg.contains(needle), "{msg:?} does not contain {needle:?}");
}

/// A minimal valid base to which tests append one mistake.
pub const BASE: &str = r#"[listeners.web]
bind = "127.0.0.1:8080"

[pools.app]
endpoints = [{ addr = "127.0.0.1:9001" }]
"#;
