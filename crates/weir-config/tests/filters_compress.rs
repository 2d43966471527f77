//! `kind = "compress"`: defaults, valid values, and every bad value at its line:column.
//!
//! Each test's extra lines land from line 13 of `src` on; a value's column is the key's
//! length plus 4 (`key = `).

mod common;
use common::*;

use weir_config::filter::{Compress, Encoding};
use weir_config::Filter;

fn src(lines: &[&str]) -> String {
    let mut s = BASE.to_string();
    s.push_str(
        "[routes.r]\nlistener = \"web\"\npool = \"app\"\nfilters = [\"gz\"]\n\n[filters.gz]\nkind = \"compress\"\n",
    );
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}

fn compress(lines: &[&str]) -> Compress {
    let l = ok(&src(lines));
    assert!(l.warnings.is_empty(), "{:#?}", l.warnings);
    match &l.config.filters["gz"] {
        Filter::Compress(c) => c.clone(),
        other => panic!("not a compress filter: {other:?}"),
    }
}

#[test]
fn defaults() {
    let c = compress(&[]);
    assert_eq!(c, Compress::default());
    assert_eq!(
        c.encodings,
        vec![Encoding::Zstd, Encoding::Br, Encoding::Gzip]
    );
    assert_eq!((c.gzip_level, c.brotli_level, c.zstd_level), (6, 4, 3));
    assert_eq!(c.min_bytes, 1024);
    for t in [
        "text/*",
        "application/json",
        "application/javascript",
        "image/svg+xml",
    ] {
        assert!(c.content_types.iter().any(|x| x == t), "{t} missing");
    }
}

#[test]
fn every_key_read() {
    let c = compress(&[
        r#"encodings = ["gzip", "br"]"#,
        "gzip_level = 1",
        "brotli_level = 11",
        "zstd_level = 19",
        r#"content_types = ["Text/HTML", "application/*"]"#,
        r#"min_bytes = "2KiB""#,
    ]);
    assert_eq!(c.encodings, vec![Encoding::Gzip, Encoding::Br]);
    assert_eq!((c.gzip_level, c.brotli_level, c.zstd_level), (1, 11, 19));
    assert_eq!(c.content_types, vec!["text/html", "application/*"]);
    assert_eq!(c.min_bytes, 2048);
    assert_eq!(
        compress(&["min_bytes = 0", "brotli_level = 0"]).min_bytes,
        0
    );
}

#[test]
fn levels_out_of_range() {
    one_error(
        &src(&["gzip_level = 0"]),
        13,
        14,
        "gzip_level = 0 is out of range; it must be between 1 and 9",
    );
    one_error(&src(&["gzip_level = 10"]), 13, 14, "between 1 and 9");
    one_error(
        &src(&["brotli_level = 12"]),
        13,
        16,
        "brotli_level = 12 is out of range; it must be between 0 and 11",
    );
    one_error(
        &src(&["zstd_level = 20"]),
        13,
        14,
        "zstd_level = 20 is out of range; it must be between 1 and 19",
    );
    one_error(&src(&["zstd_level = -1"]), 13, 14, "between 1 and 19");
    one_error(
        &src(&["gzip_level = \"6\""]),
        13,
        14,
        "expected an integer, found a string",
    );
}

#[test]
fn unknown_or_repeated_encoding() {
    one_error(
        &src(&[r#"encodings = ["gzip", "deflate"]"#]),
        13,
        22,
        "unknown encoding \"deflate\" (expected one of: zstd, br, gzip)",
    );
    one_error(
        &src(&[r#"encodings = ["brotli"]"#]),
        13,
        14,
        "unknown encoding \"brotli\", did you mean \"br\"?",
    );
    one_error(
        &src(&[r#"encodings = ["zstd", "gzip", "zstd"]"#]),
        13,
        30,
        "encoding \"zstd\" is listed twice",
    );
    one_error(&src(&["encodings = []"]), 13, 13, "encodings is empty");
    one_error(
        &src(&[r#"encodings = "gzip""#]),
        13,
        13,
        "expected an array, found a string",
    );
}

#[test]
fn bad_content_types() {
    one_error(
        &src(&[r#"content_types = ["text/html; charset=utf-8"]"#]),
        13,
        18,
        "invalid content type \"text/html; charset=utf-8\": give the media type without parameters",
    );
    one_error(
        &src(&[r#"content_types = ["text/html", "json"]"#]),
        13,
        31,
        "invalid content type \"json\": expected type/subtype",
    );
    one_error(
        &src(&[r#"content_types = ["*/*"]"#]),
        13,
        18,
        "a wildcard type would compress images",
    );
    one_error(
        &src(&[r#"content_types = ["text/*", "TEXT/*"]"#]),
        13,
        28,
        "content type \"TEXT/*\" is listed twice",
    );
    one_error(
        &src(&["content_types = []"]),
        13,
        17,
        "content_types is empty",
    );
}

#[test]
fn bad_min_bytes_and_unknown_key() {
    one_error(
        &src(&[r#"min_bytes = "1 parsec""#]),
        13,
        13,
        "invalid min_bytes",
    );
    one_error(
        &src(&["min_bytes = -1"]),
        13,
        13,
        "invalid min_bytes: -1 is negative",
    );
    one_error(
        &src(&["gzip_levle = 5"]),
        13,
        1,
        "unknown key `gzip_levle`, did you mean `gzip_level`?",
    );
}
