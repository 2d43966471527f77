//! `kind = "cors"` and `kind = "error_pages"` filters: what they read, and every bad value
//! at its line and column.
//!
//! `with` puts the filter's lines from line 8 on (`BASE` is 5 lines, then a blank line and
//! `[filters.f]` on line 7).

mod common;
use common::*;

use std::time::Duration;
use weir_config::filter::{Cors, ErrorPages, Names, OriginPattern, Page};
use weir_config::Filter;

fn with(lines: &[&str]) -> String {
    let mut s = format!("{BASE}\n[filters.f]\n");
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}

fn filter(lines: &[&str]) -> Filter {
    let l = ok(&with(lines));
    assert!(l.warnings.is_empty(), "{:#?}", l.warnings);
    l.config.filters["f"].clone()
}

fn cors(lines: &[&str]) -> Cors {
    match filter(lines) {
        Filter::Cors(c) => c,
        other => panic!("{other:?}"),
    }
}

fn pages(lines: &[&str]) -> ErrorPages {
    match filter(lines) {
        Filter::ErrorPages(e) => e,
        other => panic!("{other:?}"),
    }
}

// ---- cors ------------------------------------------------------------------

#[test]
fn cors_reads_with_its_defaults() {
    let c = cors(&[
        r#"kind = "cors""#,
        r#"allow_origins = ["https://App.Example.com:443", "https://*.example.org", "http://localhost:3000"]"#,
    ]);
    assert_eq!(
        c.allow_origins,
        vec![
            OriginPattern::Exact("https://app.example.com".into()),
            OriginPattern::Subdomains {
                prefix: "https://".into(),
                suffix: ".example.org".into()
            },
            OriginPattern::Exact("http://localhost:3000".into()),
        ]
    );
    assert_eq!(c.allow_methods, ["GET", "HEAD", "POST"]);
    assert_eq!(c.allow_headers, Names::List(vec![]));
    assert_eq!(c.expose_headers, Names::List(vec![]));
    assert_eq!(c.max_age, None);
    assert!(!c.allow_credentials);
    assert!(c.allow_origins[1].matches("https://a.b.example.org"));
    assert!(!c.allow_origins[1].matches("https://example.org"));
}

#[test]
fn cors_reads_every_key() {
    let c = cors(&[
        r#"kind = "cors""#,
        r#"allow_origins = ["https://app.example.com"]"#,
        r#"allow_methods = ["GET", "PUT", "DELETE"]"#,
        r#"allow_headers = ["X-Token", "Authorization"]"#,
        r#"expose_headers = ["X-Total"]"#,
        r#"max_age = "10m""#,
        "allow_credentials = true",
    ]);
    assert_eq!(c.allow_methods, ["GET", "PUT", "DELETE"]);
    assert_eq!(
        c.allow_headers,
        Names::List(vec!["x-token".into(), "authorization".into()])
    );
    assert_eq!(c.expose_headers, Names::List(vec!["x-total".into()]));
    assert_eq!(c.max_age, Some(Duration::from_secs(600)));
    assert!(c.allow_credentials);
    // "*" everywhere, without credentials.
    let any = cors(&[
        r#"kind = "cors""#,
        r#"allow_origins = ["*"]"#,
        r#"allow_headers = ["*"]"#,
        r#"expose_headers = ["*"]"#,
    ]);
    assert_eq!(any.allow_origins, vec![OriginPattern::Any]);
    assert_eq!(any.allow_headers, Names::Any);
    assert_eq!(any.expose_headers, Names::Any);
}

#[test]
fn a_wildcard_origin_with_credentials_is_refused_where_it_is() {
    let src = with(&[
        r#"kind = "cors""#,
        r#"allow_origins = ["*"]"#,
        "allow_credentials = true",
    ]);
    one_error(&src, 9, 18, "cannot be used with allow_credentials = true");
    let src = with(&[
        r#"kind = "cors""#,
        r#"allow_origins = ["https://a.example.com"]"#,
        r#"allow_headers = ["x-a", "*"]"#,
        "allow_credentials = true",
    ]);
    one_error(&src, 10, 25, "allow_headers = [\"*\"] cannot be used");
}

#[test]
fn bad_origins_are_errors_at_the_origin() {
    for (origin, needle) in [
        ("https://app.example.com/", "has no path"),
        ("app.example.com", "write it as scheme://host[:port]"),
        (
            "https://a.*.example.com",
            "`*` may only stand for the subdomains",
        ),
        (
            "https://app.example.com:99999",
            "expected scheme://host[:port]",
        ),
        ("null", "write it as scheme://host[:port]"),
    ] {
        let src = with(&[
            r#"kind = "cors""#,
            &format!(r#"allow_origins = ["https://ok.example.com", "{origin}"]"#),
        ]);
        one_error(&src, 9, 44, needle);
    }
    let src = with(&[
        r#"kind = "cors""#,
        r#"allow_origins = ["*", "https://a.com"]"#,
    ]);
    one_error(&src, 9, 18, "\"*\" allows every origin: give it alone");
    let src = with(&[r#"kind = "cors""#, "allow_origins = []"]);
    one_error(&src, 9, 17, "allow_origins is empty");
    let src = with(&[r#"kind = "cors""#]);
    one_error(&src, 7, 1, "has no `allow_origins`");
}

#[test]
fn bad_durations_methods_and_names_are_errors_where_written() {
    let base = [r#"kind = "cors""#, r#"allow_origins = ["https://a.com"]"#];
    let one = |line: &str, col: usize, needle: &str| {
        let mut l = base.to_vec();
        l.push(line);
        one_error(&with(&l), 10, col, needle);
    };
    one(
        r#"max_age = "10 minutes""#,
        11,
        "invalid duration \"10 minutes\"",
    );
    one("max_age = 600", 11, "expected a duration string");
    one(
        r#"allow_methods = ["GET", "BAD METHOD"]"#,
        25,
        "is not a method name",
    );
    one(
        r#"allow_headers = ["x a"]"#,
        18,
        "is not a valid header name",
    );
    one(
        r#"expose_headers = ["x:y"]"#,
        19,
        "is not a valid header name",
    );
    one(r#"allow_credentials = "yes""#, 21, "expected a boolean");
    one(
        r#"allow_origin = ["https://b.com"]"#,
        1,
        "did you mean `allow_origins`",
    );
}

// ---- error_pages -----------------------------------------------------------

#[test]
fn error_pages_read_statuses_and_a_pool_page() {
    let src = format!(
        "{}\n[pools.errors]\nendpoints = [{{ addr = \"127.0.0.1:9002\" }}]\n",
        with(&[
            r#"kind = "error_pages""#,
            r#"statuses = [404, 500, "502-504", "429"]"#,
            r#"pool = "errors""#,
        ])
    );
    let l = ok(&src);
    let Filter::ErrorPages(e) = &l.config.filters["f"] else {
        panic!()
    };
    assert_eq!(e.statuses, [(404, 404), (500, 500), (502, 504), (429, 429)]);
    assert!(e.covers(503) && e.covers(404) && !e.covers(501) && !e.covers(505));
    assert_eq!(
        e.page,
        Page::Pool {
            pool: "errors".into(),
            path: "/{status}.html".into(),
            timeout: Duration::from_secs(2),
        }
    );
}

#[test]
fn error_pages_file_type_is_given_or_guessed() {
    let e = pages(&[
        r#"kind = "error_pages""#,
        "statuses = [500]",
        r#"file = "/srv/errors/5xx.html""#,
    ]);
    assert_eq!(
        e.page,
        Page::File {
            path: "/srv/errors/5xx.html".into(),
            content_type: "text/html; charset=utf-8".into()
        }
    );
    let e = pages(&[
        r#"kind = "error_pages""#,
        "statuses = [500]",
        r#"file = "/srv/errors/5xx.page""#,
        r#"content_type = "text/html""#,
    ]);
    assert!(matches!(e.page, Page::File { content_type, .. } if content_type == "text/html"));
}

#[test]
fn bad_statuses_are_errors_at_the_item() {
    for (item, needle) in [
        (r#""504-502""#, "ends before it starts"),
        ("302", "302 is not an error status"),
        (r#""500-600""#, "600 is not an error status"),
        (r#""5xx""#, "\"5xx\" is not a status"),
        ("true", "expected a status or a range"),
    ] {
        let src = with(&[
            r#"kind = "error_pages""#,
            &format!("statuses = [404, {item}]"),
            r#"file = "/srv/e.html""#,
        ]);
        one_error(&src, 9, 18, needle);
    }
    let src = with(&[
        r#"kind = "error_pages""#,
        "statuses = []",
        r#"file = "/srv/e.html""#,
    ]);
    one_error(&src, 9, 12, "statuses is empty");
}

#[test]
fn a_page_is_a_file_or_a_pool() {
    let src = with(&[r#"kind = "error_pages""#, "statuses = [500]"]);
    one_error(&src, 7, 1, "has no page");
    let src = with(&[
        r#"kind = "error_pages""#,
        "statuses = [500]",
        r#"file = "/srv/e.html""#,
        r#"pool = "app""#,
    ]);
    one_error(&src, 11, 1, "give either file or pool, not both");
    let src = with(&[
        r#"kind = "error_pages""#,
        "statuses = [500]",
        r#"pool = "nope""#,
    ]);
    one_error(&src, 10, 8, "no pool named `nope`");
    let src = with(&[
        r#"kind = "error_pages""#,
        "statuses = [500]",
        r#"pool = "app""#,
        r#"path = "/errors/{code}.html""#,
    ]);
    one_error(&src, 11, 8, "the only placeholder is {status}");
    let src = with(&[
        r#"kind = "error_pages""#,
        "statuses = [500]",
        r#"pool = "app""#,
        r#"content_type = "text/html""#,
    ]);
    one_error(&src, 11, 1, "`content_type` is for a file");
    let src = with(&[
        r#"kind = "error_pages""#,
        "statuses = [500]",
        r#"file = "/srv/e.html""#,
        r#"timeout = "1s""#,
    ]);
    one_error(&src, 11, 1, "`timeout` is for a page from a pool");
    let src = with(&[
        r#"kind = "error_pages""#,
        "statuses = [500]",
        r#"pool = "app""#,
        r#"timeout = "0s""#,
    ]);
    one_error(&src, 11, 11, "timeout must be greater than 0");
}

/// Errors of a source whose named files are read (`weir check`, a file's load).
fn file_errors(src: &str) -> Vec<(usize, usize, String)> {
    match weir_config::parse_file_text(src, "t.toml") {
        Ok(_) => panic!("expected errors for:\n{src}"),
        Err(e) => e
            .list
            .into_iter()
            .map(|d| (d.line, d.col, d.message))
            .collect(),
    }
}

#[test]
fn page_files_are_read_by_check_with_a_bound() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.html");
    let src = with(&[
        r#"kind = "error_pages""#,
        "statuses = [500]",
        &format!("file = {:?}", missing.display().to_string()),
    ]);
    // A config read without its files (`parse_str`, `weir ctl apply`) does not look.
    ok(&src);
    let errs = file_errors(&src);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!((errs[0].0, errs[0].1), (10, 8));
    assert!(
        errs[0].2.contains("error page: cannot read") && errs[0].2.contains("missing.html"),
        "{}",
        errs[0].2
    );

    let big = dir.path().join("big.html");
    std::fs::write(&big, vec![b'x'; (1 << 20) + 1]).unwrap();
    let src = with(&[
        r#"kind = "error_pages""#,
        "statuses = [500]",
        &format!("file = {:?}", big.display().to_string()),
    ]);
    let errs = file_errors(&src);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!((errs[0].0, errs[0].1), (10, 8));
    assert!(
        errs[0]
            .2
            .contains("is larger than 1024 KiB (1048577 bytes)"),
        "{}",
        errs[0].2
    );

    let src = with(&[
        r#"kind = "error_pages""#,
        "statuses = [500]",
        &format!("file = {:?}", dir.path().display().to_string()),
    ]);
    let errs = file_errors(&src);
    assert!(errs[0].2.contains("is not a file"), "{errs:#?}");

    let fine = dir.path().join("fine.html");
    std::fs::write(&fine, vec![b'x'; 1 << 20]).unwrap();
    let src = with(&[
        r#"kind = "error_pages""#,
        "statuses = [500]",
        &format!("file = {:?}", fine.display().to_string()),
    ]);
    weir_config::parse_file_text(&src, "t.toml").unwrap();
}
