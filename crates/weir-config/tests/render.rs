//! The exact text `weir check` prints for a diagnostic.

use weir_config::{parse_str, Diagnostic, Diagnostics, Severity};

#[test]
fn caret_rendering_is_exact() {
    let src = format!(
        "{}bnd = \"0.0.0.0:8080\"\n",
        "[listeners.web]\n".to_string() + &"#\n".repeat(10)
    );
    let err = parse_str(&src, "weir.toml").unwrap_err();
    assert_eq!(
        err.to_string(),
        "weir.toml:12:1: error: unknown key `bnd`, did you mean `bind`?\n   \
         12 | bnd = \"0.0.0.0:8080\"\n      \
         | ^^^"
    );
}

#[test]
fn caret_sits_under_the_column() {
    let d = Diagnostic {
        severity: Severity::Warning,
        file: "weir.toml".into(),
        line: 7,
        col: 7,
        len: 3,
        message: "something".into(),
        source_line: "  x = \"abc\"".into(),
        caret_col: 7,
        caret_len: 3,
    };
    assert_eq!(
        d.to_string(),
        "weir.toml:7:7: warning: something\n    7 |   x = \"abc\"\n      |       ^^^"
    );
}

#[test]
fn tabs_and_wide_chars_keep_the_caret_aligned() {
    // Columns count chars; the padding copies tabs from the source line.
    let src = "[global]\n\tdrain_grace = \"é5\"\n";
    let err = parse_str(src, "t.toml").unwrap_err();
    let d = &err.list[0];
    assert_eq!((d.line, d.col, d.len), (2, 16, 4));
    assert!(
        err.to_string()
            .ends_with("    2 | \tdrain_grace = \"é5\"\n      | \t              ^^^^"),
        "{err}"
    );
}

#[test]
fn multi_line_spans_stop_at_the_end_of_the_line() {
    let src = "[pools.app]\nendpoints = [\n  1,\n]\nmax_conn = 1\n";
    let err = parse_str(src, "t.toml").unwrap_err();
    let d = err.errors().next().unwrap();
    assert_eq!((d.line, d.col, d.len), (3, 3, 1));
    let src = "[pools.app]\nhealth = [\n  1,\n]\n";
    let d = parse_str(src, "t.toml").unwrap_err().list.remove(0);
    assert_eq!((d.line, d.col, d.len), (2, 10, 1), "{d}");
}

#[test]
fn empty_span_at_end_of_file_still_renders() {
    let err = parse_str("[global]\ndrain_grace =", "t.toml").unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("t.toml:2:14: error: "), "{text}");
    assert!(text.ends_with("|              ^"), "{text:?}");
}

#[test]
fn diagnostics_are_separated_by_blank_lines() {
    let err = parse_str("[globl]\n[admn]\n", "t.toml").unwrap_err();
    assert_eq!(err.list.len(), 2);
    let text = err.to_string();
    let parts: Vec<&str> = text.split("\n\n").collect();
    assert_eq!(parts.len(), 2, "{text}");
    assert_eq!(parts[0], err.list[0].to_string());
    assert_eq!(parts[1], err.list[1].to_string());
    assert_eq!(
        Diagnostics {
            list: vec![],
            omitted: Default::default()
        }
        .to_string(),
        ""
    );
}
