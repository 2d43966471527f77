//! Config input read within bounds: bounded reads, a bounded number of diagnostics, long lines cut
//! around the caret, invalid UTF-8 located, token files checked like `weir run` does.

use std::path::PathBuf;

use weir_config::{
    load_file, parse_str, read_source, read_token, LoadError, TokenError, MAX_CONFIG_BYTES,
    MAX_DIAGNOSTICS, MAX_TOKEN_BYTES,
};

/// `n` bad endpoint addresses on one line: `n` errors, the k-th at column 20 + 11k.
fn many_errors(n: usize) -> String {
    let items = vec![r#"{addr="x"}"#; n].join(",");
    format!("[pools.app]\nendpoints = [{items}]\n")
}

/// The chars of the source line under the caret.
fn under_caret(d: &weir_config::Diagnostic) -> String {
    d.source_line
        .chars()
        .skip(d.caret_col - 1)
        .take(d.caret_len)
        .collect()
}

#[test]
fn only_the_first_hundred_diagnostics_are_kept_the_rest_counted() {
    let err = parse_str(&many_errors(250), "t.toml").unwrap_err();
    assert_eq!(err.list.len(), MAX_DIAGNOSTICS);
    assert_eq!((err.omitted.errors, err.omitted.warnings), (150, 0));
    assert_eq!(err.error_count(), 250);
    // The first hundred in file order.
    assert_eq!(err.list[0].col, 20);
    assert_eq!(err.list[99].col, 20 + 11 * 99);
    assert!(err
        .to_string()
        .ends_with("\n\n... and 150 more errors not shown (only the first 100 are)"));
    // At the cap exactly, nothing is said about more.
    let err = parse_str(&many_errors(100), "t.toml").unwrap_err();
    assert_eq!(err.list.len(), 100);
    assert!(err.omitted.is_empty());
    assert!(!err.to_string().contains("not shown"));
}

/// `n` tcp listeners with an http-only setting: one warning each.
fn warned_listeners(n: usize) -> String {
    let mut s = String::from("[pools.app]\n");
    for i in 0..n {
        s += &format!(
            "[listeners.l{i}]\nbind = \"127.0.0.1:{}\"\nprotocol = \"tcp\"\npool = \"app\"\nheader_timeout = \"1s\"\n",
            10000 + i
        );
    }
    s
}

#[test]
fn warnings_are_capped_too_and_come_after_every_error() {
    let l = parse_str(&warned_listeners(130), "t.toml").unwrap();
    assert_eq!((l.warnings.len(), l.omitted.warnings), (100, 30));
    assert_eq!(l.omitted.errors, 0);
    assert_eq!(
        l.omitted.to_string(),
        "... and 30 more warnings not shown (only the first 100 are)"
    );
    // 120 errors fill the list; all 130 warnings are counted behind them.
    let src = warned_listeners(130) + &many_errors(120).replace("[pools.app]", "[pools.bad]");
    let err = parse_str(&src, "t.toml").unwrap_err();
    assert_eq!(err.list.len(), 100);
    assert!(err
        .list
        .iter()
        .all(|d| d.severity == weir_config::Severity::Error));
    assert_eq!((err.omitted.errors, err.omitted.warnings), (20, 130));
    assert!(err.to_string().ends_with(
        "... and 20 more errors and 130 more warnings not shown (only the first 100 are)"
    ));
}

#[test]
fn a_long_line_is_cut_around_the_caret() {
    let err = parse_str(&many_errors(250), "t.toml").unwrap_err();
    for d in &err.list {
        assert!(d.source_line.chars().count() <= weir_config::MAX_EXCERPT_CHARS + 6);
        assert_eq!(under_caret(d), r#""x""#, "{d}");
    }
    let first = &err.list[0];
    assert!(first.source_line.starts_with("endpoints = [{addr="));
    assert!(first.source_line.ends_with("..."));
    let mid = &err.list[50];
    assert!(mid.source_line.starts_with("...") && mid.source_line.ends_with("..."));
    // 40 chars of context before the span.
    assert_eq!(mid.caret_col, 3 + 40 + 1);
    // The last error of a line sits near its end: cut at the start only.
    let err = parse_str(&many_errors(60), "t.toml").unwrap_err();
    let last = err.list.last().unwrap();
    assert!(last.source_line.starts_with("...") && last.source_line.ends_with("\"x\"}]"));
    assert_eq!(under_caret(last), r#""x""#);
    // The rendering puts the caret under it too.
    let text = last.to_string();
    let lines: Vec<&str> = text.lines().collect();
    let at = lines[2].find('^').unwrap();
    assert_eq!(&lines[1][at..at + 3], r#""x""#, "{text}");
}

#[test]
fn cutting_counts_chars_not_bytes() {
    // 200 two-byte chars before the mistake on the same line.
    let src = format!("[listeners.web]\nbind = \"{}\"\n", "é".repeat(200));
    let err = parse_str(&src, "t.toml").unwrap_err();
    let d = &err.list[0];
    assert_eq!((d.line, d.col, d.len), (2, 8, 202));
    assert!(d.source_line.ends_with("...") && !d.source_line.starts_with("..."));
    assert_eq!(d.source_line.chars().count(), 123);
    assert_eq!((d.caret_col, d.caret_len), (8, 113));
}

#[test]
fn a_huge_key_makes_no_huge_message() {
    let key = "k".repeat(100_000);
    let err = parse_str(&format!("[global]\n{key} = 1\n"), "t.toml").unwrap_err();
    let d = &err.list[0];
    assert!(
        d.message.starts_with("unknown key `kkk"),
        "{}",
        &d.message[..40]
    );
    assert!(d.message.chars().count() <= 1003 && d.message.ends_with("..."));
    assert!(err.to_string().len() < 2000);
}

/// A fresh directory under the system's temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("weir-bounds-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn reads_up_to_the_limit_and_refuses_one_byte_more() {
    let dir = TempDir::new("limit");
    let at = dir.0.join("at.toml");
    let over = dir.0.join("over.toml");
    // Comments: a valid, empty config of exactly the limit.
    let line = format!("#{}\n", "x".repeat(1022));
    let text = line.repeat((MAX_CONFIG_BYTES / 1024) as usize);
    assert_eq!(text.len() as u64, MAX_CONFIG_BYTES);
    std::fs::write(&at, &text).unwrap();
    assert_eq!(read_source(&at).unwrap().len() as u64, MAX_CONFIG_BYTES);
    std::fs::write(&over, text + "\n").unwrap();
    let err = read_source(&over).unwrap_err();
    assert!(matches!(err, LoadError::TooLarge { limit, .. } if limit == MAX_CONFIG_BYTES));
    assert_eq!(
        err.to_string(),
        format!(
            "{}: larger than 16 MiB (16777216 bytes), the most weir reads from a config file",
            over.display()
        )
    );
    // A device that never ends is read up to the bound only.
    let err = load_file("/dev/zero".as_ref()).unwrap_err();
    assert!(matches!(err, LoadError::TooLarge { .. }), "{err}");
}

fn utf8_error(bytes: &[u8]) -> weir_config::Diagnostic {
    let dir = TempDir::new("utf8");
    let path = dir.0.join("t.toml");
    std::fs::write(&path, bytes).unwrap();
    match load_file(&path) {
        Err(LoadError::Invalid(d)) => {
            assert_eq!((d.list.len(), d.error_count()), (1, 1));
            d.list.into_iter().next().unwrap()
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn invalid_utf8_is_located_at_its_first_bad_byte() {
    let d = utf8_error(b"[global]\r\ndrain_grace = \"\xc3\xa9\xff\xfe 5s\"\r\n\xff\n");
    assert_eq!((d.line, d.col, d.len), (2, 17, 1));
    assert_eq!(
        d.message,
        "invalid UTF-8 (byte 0xFF): a config file must be UTF-8 text"
    );
    // Shown as an editor would: bad bytes as U+FFFD, no '\r'.
    assert_eq!(d.source_line, "drain_grace = \"é\u{fffd}\u{fffd} 5s\"");
    assert_eq!((d.caret_col, d.caret_len), (17, 1));
    let d = utf8_error(b"\x80");
    assert_eq!((d.line, d.col), (1, 1));
    // A sequence cut off by the end of the file.
    let d = utf8_error(b"# caf\xc3");
    assert_eq!((d.line, d.col), (1, 6));
    assert!(d.message.contains("0xC3"), "{}", d.message);
}

#[test]
fn token_files_are_read_like_weir_run_reads_them() {
    let dir = TempDir::new("token");
    let token = dir.0.join("token");
    std::fs::write(&token, "  s3cret \n").unwrap();
    assert_eq!(read_token(&token).unwrap(), "s3cret");
    std::fs::write(&token, " \n\t").unwrap();
    assert!(matches!(read_token(&token), Err(TokenError::Empty(_))));
    std::fs::write(&token, "a".repeat(MAX_TOKEN_BYTES as usize)).unwrap();
    assert!(read_token(&token).is_ok());
    std::fs::write(&token, "a".repeat(MAX_TOKEN_BYTES as usize + 1)).unwrap();
    assert!(matches!(
        read_token(&token),
        Err(TokenError::TooLarge { .. })
    ));
    assert!(matches!(
        read_token("/dev/zero".as_ref()),
        Err(TokenError::TooLarge { .. })
    ));
    assert!(matches!(
        read_token(&dir.0.join("missing")),
        Err(TokenError::Read { .. })
    ));
}

#[test]
fn load_file_reports_an_unusable_token_file_at_its_key_and_parse_str_reads_no_file() {
    let dir = TempDir::new("token-key");
    let token = dir.0.join("token");
    std::fs::write(&token, "\n").unwrap();
    let cfg = dir.0.join("weir.toml");
    let text = format!(
        "[admin]\nlisten = \"127.0.0.1:9901\"\n  token_file = {:?}\n",
        token.display().to_string()
    );
    std::fs::write(&cfg, &text).unwrap();
    let err = match load_file(&cfg) {
        Err(LoadError::Invalid(d)) => d,
        other => panic!("{other:?}"),
    };
    let d = &err.list[0];
    assert_eq!((d.line, d.col, d.len), (3, 3, 10));
    assert_eq!(
        d.message,
        format!("token file {} is empty", token.display())
    );
    // Only `weir check`'s load reads it: the API validates configs it renders itself.
    assert!(parse_str(&text, "t.toml").is_ok());
    std::fs::write(&token, "s3cret").unwrap();
    assert!(load_file(&cfg).is_ok());
}

/// `n` pools and `n` routes, each route naming a pool that does not exist.
fn missing_pools(n: usize) -> String {
    let mut s = String::from("[listeners.web]\nbind = \"127.0.0.1:8080\"\n");
    for i in 0..n {
        s += &format!(
            "[pools.p{i}]\n[routes.r{i}]\nlistener = \"web\"\npath_prefix = \"/r{i}\"\npool = \"zzzz{i}\"\n"
        );
    }
    s
}

#[test]
fn a_missing_name_lists_ten_names_and_only_the_shown_ones_are_searched() {
    // Each message listed every pool, and each searched all of them for a suggestion:
    // quadratic in time and in memory.
    let err = parse_str(&missing_pools(3000), "t.toml").unwrap_err();
    assert_eq!(err.error_count(), 3000);
    let first = &err.list[0];
    assert_eq!(
        first.message,
        "no pool named `zzzz0` (defined pools: p0, p1, p10, p100, p1000, p1001, p1002, p1003, p1004, p1005, and 2990 more)"
    );
    assert!(err
        .list
        .iter()
        .all(|d| d.message.ends_with("and 2990 more)")));
    // A close name is still suggested.
    let err = parse_str(&missing_pools(3).replace("zzzz1", "p11"), "t.toml").unwrap_err();
    assert_eq!(
        err.list[1].message,
        "no pool named `p11`, did you mean `p1`?"
    );
}
