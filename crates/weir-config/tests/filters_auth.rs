//! `basic_auth` and `forward_auth` filters: their models and defaults, every bad value at
//! its line:column, and what `weir check` reads of a users file (refused hash schemes named
//! with the file's line and user).

mod common;

use std::time::Duration;

use common::*;
use weir_config::Filter;

/// Line and column (1-based) of the first `needle` in `src`.
fn at(src: &str, needle: &str) -> (usize, usize) {
    let off = src
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in source"));
    let line = src[..off].matches('\n').count() + 1;
    let col = off - src[..off].rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, col)
}

fn one_error_at(src: &str, needle: &str, msg: &str) {
    let (l, c) = at(src, needle);
    one_error(src, l, c, msg);
}

/// Errors of `src` checked as `weir check` does, reading the files it names.
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

const BCRYPT: &str = "$2y$05$IujhHJrLQ4B.SErvCkWlRO/FBox9DDhPEsArQKZfD2RHolSSpaS.y";
const ARGON2: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$6Q3RnhJuiXRFvAXz3DbFGp7V5ej5v4U/4Nhp7AxE5Bg";

fn basic(extra: &str) -> String {
    format!("{BASE}\n[filters.auth]\nkind = \"basic_auth\"\n{extra}\n")
}

fn forward(extra: &str) -> String {
    format!("{BASE}\n[pools.auth]\nendpoints = [{{ addr = \"127.0.0.1:9002\" }}]\n\n[filters.fa]\nkind = \"forward_auth\"\n{extra}\n")
}

#[test]
fn basic_auth_model_and_defaults() {
    let l = ok(&basic("users_file = \"/etc/weir/htpasswd\""));
    let Filter::BasicAuth(b) = &l.config.filters["auth"] else {
        panic!("not basic_auth")
    };
    assert_eq!(b.users_file.to_str(), Some("/etc/weir/htpasswd"));
    assert_eq!(b.realm, "weir");
    assert_eq!(b.user_header, None);
    let l = ok(&basic(
        "users_file = \"/x\"\nrealm = \"Staff area\"\nuser_header = \"X-Auth-User\"",
    ));
    let Filter::BasicAuth(b) = &l.config.filters["auth"] else {
        panic!("not basic_auth")
    };
    assert_eq!(b.realm, "Staff area");
    assert_eq!(b.user_header.as_deref(), Some("x-auth-user"));
}

#[test]
fn basic_auth_bad_values() {
    let src = basic("");
    one_error_at(&src, "[filters.auth]", "has no `users_file`");
    let src = basic("users_file = \"\"");
    one_error_at(&src, "\"\"", "empty string");
    let src = basic("users_file = 77");
    one_error_at(&src, "77", "expected a string");
    let src = basic("users_file = \"/x\"\nrealm = \"a\\\"b\"");
    one_error_at(&src, "\"a\\\"b\"", "invalid realm");
    let src = basic("users_file = \"/x\"\nuser_header = \"Content-Length\"");
    one_error_at(&src, "\"Content-Length\"", "may not use `Content-Length`");
    let src = basic("users_file = \"/x\"\nuser_header = \"bad header\"");
    one_error_at(&src, "\"bad header\"", "not a valid header name");
    let src = basic("users_file = \"/x\"\nuser_heder = \"x\"");
    one_error_at(
        &src,
        "user_heder",
        "unknown key `user_heder`, did you mean `user_header`?",
    );
}

#[test]
fn check_reads_the_users_file() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good");
    std::fs::write(&good, format!("# staff\n\nalice:{BCRYPT}\nbob:{ARGON2}\n")).unwrap();
    let src = basic(&format!("users_file = \"{}\"", good.display()));
    weir_config::parse_file_text(&src, "t.toml").expect("a good users file");

    // Each refused line is named with its number and user, at the users_file value.
    let bad = dir.path().join("bad");
    std::fs::write(
        &bad,
        format!(
            "alice:{BCRYPT}\ncarol:$apr1$EkIcIL0v$TkhRQRPfzGFVG8B.KHOES0\ndave:{{SHA}}lcsL/Sl3x2EpjZYk5LTUxyo5l0o=\n# old\nerin:8bVji1AvFJPtQ\nfrank:hunter2\n"
        ),
    )
    .unwrap();
    let src = basic(&format!("users_file = \"{}\"", bad.display()));
    let errs = file_errors(&src);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    let (l, c) = at(&src, &format!("\"{}\"", bad.display()));
    assert_eq!((errs[0].0, errs[0].1), (l, c));
    let msg = &errs[0].2;
    for part in [
        "line 2, user `carol`: Apache MD5 (`$apr1$`) hashes are refused",
        "line 3, user `dave`: `{SHA}` hashes are refused",
        "line 5, user `erin`: crypt(3) DES hashes are refused",
        "line 6, user `frank`: plain-text passwords",
        "htpasswd -B",
    ] {
        assert!(msg.contains(part), "{msg:?} lacks {part:?}");
    }

    let broken = dir.path().join("broken");
    std::fs::write(&broken, "alice:$2y$05$short\nalice2\n").unwrap();
    let src = basic(&format!("users_file = \"{}\"", broken.display()));
    let msg = &file_errors(&src)[0].2;
    assert!(
        msg.contains("line 1, user `alice`: not a valid bcrypt hash"),
        "{msg}"
    );
    assert!(msg.contains("line 2: expected `user:hash`"), "{msg}");
    assert!(!msg.contains("short"), "the hash is not quoted: {msg}");

    let missing = dir.path().join("missing");
    let src = basic(&format!("users_file = \"{}\"", missing.display()));
    let errs = file_errors(&src);
    let (l, c) = at(&src, &format!("\"{}\"", missing.display()));
    assert_eq!((errs[0].0, errs[0].1), (l, c));
    assert!(errs[0].2.contains("cannot read"), "{}", errs[0].2);

    // parse_str reads no file.
    ok(&src);
}

#[test]
fn forward_auth_model_and_defaults() {
    let l = ok(&forward("pool = \"auth\""));
    let Filter::ForwardAuth(f) = &l.config.filters["fa"] else {
        panic!("not forward_auth")
    };
    assert_eq!(f.pool, "auth");
    assert_eq!(f.path, "/");
    assert_eq!(f.request_headers, ["authorization", "cookie"]);
    assert!(f.response_headers.is_empty());
    assert_eq!(f.timeout, Duration::from_secs(5));
    assert_eq!(f.cache_ttl, None);
    let l = ok(&forward(
        "pool = \"auth\"\npath = \"/verify?app=shop\"\nrequest_headers = [\"Authorization\", \"X-Api-Key\"]\nresponse_headers = [\"X-User\", \"X-Groups\"]\ntimeout = \"2s\"\ncache_ttl = \"30s\"",
    ));
    let Filter::ForwardAuth(f) = &l.config.filters["fa"] else {
        panic!("not forward_auth")
    };
    assert_eq!(f.path, "/verify?app=shop");
    assert_eq!(f.request_headers, ["authorization", "x-api-key"]);
    assert_eq!(f.response_headers, ["x-user", "x-groups"]);
    assert_eq!(f.timeout, Duration::from_secs(2));
    assert_eq!(f.cache_ttl, Some(Duration::from_secs(30)));
    assert_eq!(f.cache_key, f.request_headers, "cache_key defaults to them");
    let l = ok(&forward(
        "pool = \"auth\"\ncache_ttl = \"1m\"\ncache_key = [\"Cookie\"]",
    ));
    let Filter::ForwardAuth(f) = &l.config.filters["fa"] else {
        panic!("not forward_auth")
    };
    assert_eq!(f.cache_key, ["cookie"]);
}

#[test]
fn forward_auth_bad_values() {
    let src = forward("");
    one_error_at(&src, "[filters.fa]", "has no `pool`");
    let src = forward("pool = \"auht\"");
    one_error_at(
        &src,
        "\"auht\"",
        "no pool named `auht`, did you mean `auth`?",
    );
    let src = forward("pool = \"auth\"\npath = \"verify\"");
    one_error_at(&src, "\"verify\"", "invalid path");
    let src = forward("pool = \"auth\"\npath = \"/a b\"");
    one_error_at(&src, "\"/a b\"", "invalid path");
    let src = forward("pool = \"auth\"\nrequest_headers = [\"Cookie\", \"Host\"]");
    one_error_at(&src, "\"Host\"", "may not use `Host`");
    let src = forward("pool = \"auth\"\nresponse_headers = [\"X-User\", \"x-user\"]");
    one_error_at(&src, "\"x-user\"", "already in this list");
    let src = forward("pool = \"auth\"\nresponse_headers = \"X-User\"");
    one_error_at(&src, "\"X-User\"", "expected an array");
    let src = forward("pool = \"auth\"\ntimeout = \"0s\"");
    one_error_at(&src, "\"0s\"", "timeout must be greater than 0");
    let src = forward("pool = \"auth\"\ncache_ttl = \"soon\"");
    one_error_at(&src, "\"soon\"", "");
    let src = forward("pool = \"auth\"\ncache_key = [\"Cookie\"]");
    one_error_at(
        &src,
        "cache_key",
        "cache_key does nothing without cache_ttl",
    );
    let src = forward("pool = \"auth\"\ncache_ttl = \"5s\"\ncache_key = []");
    one_error_at(&src, "[]", "share one cached answer");
    let src = forward("pool = \"auth\"\nrequest_headers = []\ncache_ttl = \"5s\"");
    one_error_at(&src, "cache_ttl", "nothing to key the cache by");
    let src = forward("pool = \"auth\"\ntimout = \"1s\"");
    one_error_at(&src, "timout", "did you mean `timeout`?");
}

#[test]
fn routes_chain_the_auth_filters() {
    let src = format!(
        "{}\n[filters.staff]\nkind = \"basic_auth\"\nusers_file = \"/x\"\n\n[routes.r]\nlistener = \"web\"\npool = \"app\"\nfilters = [\"staff\", \"fa\"]\n",
        forward("pool = \"auth\"")
    );
    let l = ok(&src);
    assert_eq!(l.config.routes["r"].filters, ["staff", "fa"]);
}

/// Through the API (the same readers): each problem names its field, and a pool a
/// forward_auth names cannot be deleted from under it.
#[test]
fn through_the_api_problems_name_their_fields() {
    use serde_json::json;
    use weir_config::{Admin, Global, ResourceChange, ResourceKind, Resources};
    let put = |kind, name, spec| ResourceChange {
        kind,
        name,
        spec: Some(spec),
    };
    let fields = |r: Result<(), Vec<weir_config::FieldProblem>>| -> Vec<String> {
        r.unwrap_err()
            .into_iter()
            .map(|p| p.field.unwrap_or_default())
            .collect()
    };
    let mut r = Resources::new(Admin::default(), Global::default());
    let pool = json!({});
    let fa = json!({"kind": "forward_auth", "pool": "auth", "timeout": "0s"});
    assert_eq!(
        fields(r.apply(&[
            put(ResourceKind::Pool, "app", &pool),
            put(ResourceKind::Filter, "fa", &fa),
        ])),
        ["filters/fa/timeout"]
    );
    let fa = json!({"kind": "forward_auth", "pool": "auht"});
    assert_eq!(
        fields(r.apply(&[
            put(ResourceKind::Pool, "auth", &pool),
            put(ResourceKind::Filter, "fa", &fa),
        ])),
        ["filters/fa/pool"]
    );
    let fa = json!({"kind": "forward_auth", "pool": "auth"});
    let ba = json!({"kind": "basic_auth", "users_file": "/x", "realm": "a\"b"});
    assert_eq!(
        fields(r.apply(&[
            put(ResourceKind::Pool, "auth", &pool),
            put(ResourceKind::Filter, "fa", &fa),
            put(ResourceKind::Filter, "ba", &ba),
        ])),
        ["filters/ba/realm"]
    );
    r.apply(&[
        put(ResourceKind::Pool, "auth", &pool),
        put(ResourceKind::Filter, "fa", &fa),
    ])
    .unwrap();
    let gone = ResourceChange {
        kind: ResourceKind::Pool,
        name: "auth",
        spec: None,
    };
    assert_eq!(fields(r.apply(&[gone])), ["filters/fa/pool"]);
}
