//! The capacity and balancing keys of a pool: `max_conn_total`, `hash_key`,
//! `hash_balance_factor`, `sticky_cookie`, `sticky_base`, `sticky_secret`,
//! `slow_start`, and which algorithms a tcp listener may use.
//!
//! Every appended key lands on line 6 of `BASE`; a value's column is the
//! key's length plus 4 (`key = `).

mod common;
use common::*;

use std::time::Duration;
use weir_config::*;

/// `BASE` plus one line per entry.
fn with(lines: &[&str]) -> String {
    let mut s = BASE.to_string();
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}

fn pool(lines: &[&str]) -> Pool {
    let l = ok(&with(lines));
    assert!(l.warnings.is_empty(), "{:#?}", l.warnings);
    l.config.pools["app"].clone()
}

// ---- defaults and valid values ----------------------------------------

#[test]
fn new_keys_have_their_documented_defaults() {
    let p = pool(&[]);
    assert_eq!(p.max_conn_total, 0);
    assert_eq!(p.hash_key, HashKey::ClientIp);
    assert_eq!(p.hash_balance_factor, 1.25);
    assert_eq!(
        p.sticky,
        Sticky {
            cookie: "weir_sticky".into(),
            base: Balance::RoundRobin,
            secret: None,
        }
    );
    assert_eq!(p.slow_start, Duration::ZERO);
    // The same values are what `Pool::default()` and `defaults` give.
    let d = Pool::default();
    assert_eq!(
        (
            d.max_conn_total,
            &d.hash_key,
            d.hash_balance_factor,
            &d.sticky
        ),
        (0, &HashKey::ClientIp, 1.25, &p.sticky)
    );
    assert_eq!(defaults::HASH_BALANCE_FACTOR, 1.25);
    assert_eq!(defaults::STICKY_COOKIE, "weir_sticky");
}

#[test]
fn every_balance_value_parses() {
    for (s, b) in [
        ("round_robin", Balance::RoundRobin),
        ("least_conn", Balance::LeastConn),
        ("random", Balance::Random),
        ("p2c", Balance::P2c),
        ("ewma", Balance::Ewma),
        ("hash", Balance::Hash),
        ("sticky", Balance::Sticky),
    ] {
        // No "not implemented yet" warning for any of them any more.
        assert_eq!(pool(&[&format!("balance = \"{s}\"")]).balance, b, "{s}");
    }
}

#[test]
fn capacity_keys_parse_without_not_enforced_warnings() {
    let p = pool(&[
        "max_conn = 4",
        "max_conn_total = 10",
        "max_queue = 100",
        "queue_timeout = \"2s\"",
        "overflow_status = 429",
    ]);
    assert_eq!((p.max_conn, p.max_conn_total, p.max_queue), (4, 10, 100));
    assert_eq!(p.queue_timeout, Duration::from_secs(2));
    assert_eq!(p.overflow_status, 429);
    assert_eq!(
        pool(&["max_conn_total = 1000000"]).max_conn_total,
        1_000_000
    );
    assert_eq!(pool(&["max_conn_total = 0"]).max_conn_total, 0);
}

#[test]
fn max_queue_may_rely_on_max_conn_total_alone() {
    // The pool-wide cap makes requests wait just as max_conn does.
    let p = pool(&["max_conn_total = 8", "max_queue = 50"]);
    assert_eq!((p.max_conn, p.max_conn_total, p.max_queue), (0, 8, 50));
    // With neither cap, a queue can never fill.
    one_error(
        &with(&["max_conn_total = 0", "max_queue = 50"]),
        7,
        13,
        "max_queue needs max_conn (or max_conn_total)",
    );
}

#[test]
fn hash_key_forms() {
    for (s, k) in [
        ("client_ip", HashKey::ClientIp),
        ("path", HashKey::Path),
        ("header:x-user", HashKey::Header("x-user".into())),
        // Header names are case-insensitive: stored lower-cased.
        (
            "header:X-Tenant_ID.v2",
            HashKey::Header("x-tenant_id.v2".into()),
        ),
        // Cookie names are case-sensitive: kept as written.
        ("cookie:SessionId", HashKey::Cookie("SessionId".into())),
        ("cookie:a.b-c_d", HashKey::Cookie("a.b-c_d".into())),
    ] {
        let p = pool(&["balance = \"hash\"", &format!("hash_key = \"{s}\"")]);
        assert_eq!(p.hash_key, k, "{s}");
    }
}

#[test]
fn hash_balance_factor_values() {
    for (s, f) in [
        ("0", 0.0),
        ("0.0", 0.0),
        ("1", 1.0),
        ("1.0", 1.0),
        ("1.25", 1.25),
        ("2", 2.0),
        ("1e1", 10.0),
        ("100", 100.0),
        ("100.0", 100.0),
    ] {
        let p = pool(&[&format!("hash_balance_factor = {s}")]);
        assert_eq!(p.hash_balance_factor, f, "{s}");
    }
}

#[test]
fn sticky_keys_parse() {
    let p = pool(&[
        "balance = \"sticky\"",
        "sticky_cookie = \"SRV_id-1.x\"",
        "sticky_base = \"least_conn\"",
        "sticky_secret = \"0123456789abcdef\"",
    ]);
    assert_eq!(p.balance, Balance::Sticky);
    assert_eq!(
        p.sticky,
        Sticky {
            cookie: "SRV_id-1.x".into(),
            base: Balance::LeastConn,
            secret: Some("0123456789abcdef".into()),
        }
    );
    // Every algorithm but sticky itself can be the base.
    for (s, b) in [
        ("round_robin", Balance::RoundRobin),
        ("least_conn", Balance::LeastConn),
        ("random", Balance::Random),
        ("p2c", Balance::P2c),
        ("ewma", Balance::Ewma),
        ("hash", Balance::Hash),
    ] {
        assert_eq!(pool(&[&format!("sticky_base = \"{s}\"")]).sticky.base, b);
    }
    // A long secret is kept verbatim.
    let long = "x".repeat(64);
    let p = pool(&[&format!("sticky_secret = \"{long}\"")]);
    assert_eq!(p.sticky.secret.as_deref(), Some(long.as_str()));
}

#[test]
fn slow_start_values() {
    assert_eq!(
        pool(&["slow_start = \"30s\""]).slow_start,
        Duration::from_secs(30)
    );
    assert_eq!(
        pool(&["slow_start = \"500ms\""]).slow_start,
        Duration::from_millis(500)
    );
    assert_eq!(
        pool(&["slow_start = \"2m\""]).slow_start,
        Duration::from_secs(120)
    );
    // Zero is "off", the default, not an error.
    assert_eq!(pool(&["slow_start = \"0s\""]).slow_start, Duration::ZERO);
}

#[test]
fn a_pool_using_every_new_key_is_accepted_without_warnings() {
    let src = r#"[listeners.web]
bind = "127.0.0.1:8080"
pool = "app"

[pools.app]
balance = "sticky"
endpoints = [
  { addr = "127.0.0.1:9001", weight = 10 },
  { addr = "127.0.0.1:9002", weight = 5 },
]
max_conn = 4
max_conn_total = 6
max_queue = 100
queue_timeout = "3s"
overflow_status = 429
hash_key = "cookie:session"
hash_balance_factor = 1.5
sticky_cookie = "lb"
sticky_base = "hash"
sticky_secret = "a-long-enough-secret"
slow_start = "1m"
"#;
    let l = ok(src);
    assert!(l.warnings.is_empty(), "{:#?}", l.warnings);
    let p = &l.config.pools["app"];
    assert_eq!(p.balance, Balance::Sticky);
    assert_eq!(p.hash_key, HashKey::Cookie("session".into()));
    assert_eq!(p.hash_balance_factor, 1.5);
    assert_eq!(p.sticky.cookie, "lb");
    assert_eq!(p.sticky.base, Balance::Hash);
    assert_eq!(p.sticky.secret.as_deref(), Some("a-long-enough-secret"));
    assert_eq!(p.slow_start, Duration::from_secs(60));
    assert_eq!((p.max_conn, p.max_conn_total, p.max_queue), (4, 6, 100));
}

// ---- invalid values, each at its exact line:col --------------------------

#[test]
fn max_conn_total_errors() {
    one_error(
        &with(&["max_conn_total = -1"]),
        6,
        18,
        "max_conn_total = -1 is out of range; it must be between 0 and 1000000",
    );
    one_error(&with(&["max_conn_total = 1000001"]), 6, 18, "out of range");
    one_error(
        &with(&["max_conn_total = \"10\""]),
        6,
        18,
        "expected an integer, found a string",
    );
    one_error(
        &with(&["max_conn_totl = 10"]),
        6,
        1,
        "unknown key `max_conn_totl`, did you mean `max_conn_total`?",
    );
}

#[test]
fn bad_hash_keys() {
    for bad in [
        "",
        "ip",
        "client-ip",
        "CLIENT_IP",
        "client_ip:x",
        "path:/x",
        "header",
        "header:",
        "cookie",
        "cookie:",
        "Header:x-user",
        "headers:x-user",
        "header:x user",
        "header:x:y",
        "cookie:a=b",
        "cookie:a;b",
        "query:id",
    ] {
        let src = with(&[&format!("hash_key = \"{bad}\"")]);
        let errs = errors(&src);
        assert_eq!(errs.len(), 1, "{bad:?}: {errs:#?}");
        let (l, c, msg) = &errs[0];
        assert_eq!((*l, *c), (6, 12), "{bad:?}: {msg}");
        assert_eq!(
            msg,
            &format!(
                "invalid hash_key {bad:?} (expected client_ip, path, header:NAME or cookie:NAME)"
            ),
        );
    }
    one_error(
        &with(&["hash_key = 1"]),
        6,
        12,
        "expected a string, found an integer",
    );
    one_error(
        &with(&["hash_keys = \"path\""]),
        6,
        1,
        "did you mean `hash_key`?",
    );
}

#[test]
fn bad_hash_balance_factors() {
    for (v, shown) in [
        ("0.5", "0.5"),
        ("0.99", "0.99"),
        ("101", "101"),
        ("100.5", "100.5"),
        ("-1", "-1"),
        ("-1.5", "-1.5"),
        ("1e3", "1000"),
        ("inf", "inf"),
        ("nan", "NaN"),
    ] {
        one_error(
            &with(&[&format!("hash_balance_factor = {v}")]),
            6,
            23,
            &format!(
                "hash_balance_factor = {shown} is out of range; use 0 (unbounded) or a number from 1.0 to 100"
            ),
        );
    }
    for (v, found) in [
        ("\"1.25\"", "a string"),
        ("true", "a boolean"),
        ("[1.25]", "an array"),
    ] {
        one_error(
            &with(&[&format!("hash_balance_factor = {v}")]),
            6,
            23,
            &format!("expected a number (e.g. 1.25), found {found}"),
        );
    }
}

#[test]
fn bad_sticky_cookie_names() {
    for bad in [
        "",
        "a b",
        "a=b",
        "a;b",
        "a,b",
        "a\\\"b",
        "(a)",
        "caf\u{e9}",
        "a/b",
    ] {
        let src = with(&[&format!("sticky_cookie = \"{bad}\"")]);
        let errs = errors(&src);
        assert_eq!(errs.len(), 1, "{bad:?}: {errs:#?}");
        let (l, c, msg) = &errs[0];
        assert_eq!((*l, *c), (6, 17), "{bad:?}: {msg}");
        assert!(msg.starts_with("invalid cookie name "), "{bad:?}: {msg}");
        assert!(msg.contains("use letters, digits and -_."), "{msg}");
    }
    one_error(
        &with(&["sticky_cookie = 7"]),
        6,
        17,
        "expected a string, found an integer",
    );
}

#[test]
fn sticky_base_cannot_be_sticky() {
    one_error(
        &with(&["balance = \"sticky\"", "sticky_base = \"sticky\""]),
        7,
        15,
        "sticky_base must be another algorithm than sticky",
    );
    // Even where the pool is not sticky: it is never meaningful.
    one_error(
        &with(&["sticky_base = \"sticky\""]),
        6,
        15,
        "sticky_base must be another algorithm than sticky",
    );
    one_error(
        &with(&["sticky_base = \"rund_robin\""]),
        6,
        15,
        "invalid sticky_base \"rund_robin\", did you mean `round_robin`?",
    );
    one_error(
        &with(&["sticky_base = 1"]),
        6,
        15,
        "expected a string, found an integer",
    );
}

#[test]
fn short_sticky_secrets() {
    for bad in ["", "x", "0123456789abcde"] {
        one_error(
            &with(&[&format!("sticky_secret = \"{bad}\"")]),
            6,
            17,
            "sticky_secret must be at least 16 characters",
        );
    }
    one_error(
        &with(&["sticky_secret = 1234567890123456"]),
        6,
        17,
        "expected a string, found an integer",
    );
}

#[test]
fn bad_slow_start() {
    for (v, needle) in [
        ("\"30\"", "missing unit"),
        ("\"1.5s\"", "fractions are not supported"),
        ("\"-1s\"", "cannot be negative"),
        ("\"10 s\"", "unknown unit"),
        ("\"10d\"", "unknown unit `d`"),
        ("\"\"", "empty duration"),
        ("\"8761h\"", "too large"),
        (
            "30",
            "expected a duration string like \"5s\", found an integer",
        ),
    ] {
        one_error(&with(&[&format!("slow_start = {v}")]), 6, 14, needle);
    }
    one_error(
        &with(&["slowstart = \"10s\""]),
        6,
        1,
        "did you mean `slow_start`?",
    );
}

#[test]
fn every_bad_new_key_in_one_pool_is_reported() {
    let src = with(&[
        "max_conn_total = -2",
        "hash_key = \"header:\"",
        "hash_balance_factor = 0.5",
        "sticky_cookie = \"a b\"",
        "sticky_base = \"sticky\"",
        "sticky_secret = \"short\"",
        "slow_start = \"5\"",
    ]);
    let errs = errors(&src);
    let at: Vec<(usize, usize)> = errs.iter().map(|(l, c, _)| (*l, *c)).collect();
    assert_eq!(
        at,
        vec![
            (6, 18),
            (7, 12),
            (8, 23),
            (9, 17),
            (10, 15),
            (11, 17),
            (12, 14)
        ],
        "{errs:#?}"
    );
}

#[test]
fn errors_render_with_a_caret_under_the_value() {
    let d = diags(&with(&["hash_balance_factor = 101"]));
    let shown = d[0].to_string();
    assert!(
        shown.starts_with("t.toml:6:23: error: hash_balance_factor = 101 is out of range"),
        "{shown}"
    );
    assert!(shown.contains("hash_balance_factor = 101\n"), "{shown}");
    assert!(shown.ends_with("^^^"), "{shown}");
}

// ---- tcp listeners ------------------------------------------------------

/// A tcp listener on pool `db` (its `pool` value is at 4:8), with `lines` in `[pools.db]`.
fn tcp(lines: &[&str]) -> String {
    let mut s = String::from(
        "[listeners.pg]\nbind = \"127.0.0.1:5433\"\nprotocol = \"tcp\"\npool = \"db\"\n\n[pools.db]\nendpoints = [{ addr = \"127.0.0.1:5432\" }]\n",
    );
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}

#[test]
fn tcp_listeners_accept_connection_level_algorithms() {
    for b in ["round_robin", "least_conn", "random", "p2c"] {
        let l = ok(&tcp(&[&format!("balance = \"{b}\"")]));
        assert!(l.warnings.is_empty(), "{b}: {:#?}", l.warnings);
    }
    // hash on client_ip, explicit or by default.
    let p = &ok(&tcp(&["balance = \"hash\"", "hash_key = \"client_ip\""]))
        .config
        .pools["db"];
    assert_eq!(
        (p.balance, &p.hash_key),
        (Balance::Hash, &HashKey::ClientIp)
    );
    ok(&tcp(&["balance = \"hash\""]));
    // Capacity control applies to tcp sessions too.
    ok(&tcp(&[
        "balance = \"p2c\"",
        "max_conn = 2",
        "max_conn_total = 3",
        "max_queue = 10",
        "slow_start = \"10s\"",
    ]));
    // A hash_key that is never used (balance is not hash) does not matter.
    ok(&tcp(&[
        "balance = \"least_conn\"",
        "hash_key = \"header:x\"",
    ]));
}

#[test]
fn tcp_listeners_reject_request_level_algorithms_at_their_pool() {
    let tail = "(tcp supports round_robin, least_conn, random, p2c, and hash on client_ip)";
    for b in ["ewma", "sticky"] {
        let errs = errors(&tcp(&[&format!("balance = \"{b}\"")]));
        assert_eq!(errs.len(), 1, "{errs:#?}");
        let (l, c, msg) = &errs[0];
        assert_eq!((*l, *c), (4, 8), "{msg}");
        assert_eq!(
            msg,
            &format!("pool `db` uses balance = \"{b}\", which tcp listeners do not support {tail}")
        );
    }
    for (key, shown) in [
        ("header:X-User", "header:x-user"),
        ("cookie:sid", "cookie:sid"),
        ("path", "path"),
    ] {
        let errs = errors(&tcp(&[
            "balance = \"hash\"",
            &format!("hash_key = \"{key}\""),
        ]));
        assert_eq!(errs.len(), 1, "{errs:#?}");
        let (l, c, msg) = &errs[0];
        assert_eq!((*l, *c), (4, 8), "{msg}");
        assert_eq!(
            msg,
            &format!(
                "pool `db` hashes on hash_key = \"{shown}\"; a tcp listener can only hash on client_ip {tail}"
            )
        );
    }
}

#[test]
fn the_tcp_rule_is_per_listener() {
    // One ewma pool, used by an http listener (fine) and two tcp listeners
    // (an error at each one's `pool`).
    let src = r#"[listeners.web]
bind = "127.0.0.1:8080"
pool = "app"

[listeners.t1]
bind = "127.0.0.1:7001"
protocol = "tcp"
pool = "app"

[listeners.t2]
bind = "127.0.0.1:7002"
protocol = "tcp"
pool = "app"

[routes.r]
listener = "web"
pool = "app"

[pools.app]
balance = "ewma"
"#;
    let errs = errors(src);
    let at: Vec<(usize, usize)> = errs.iter().map(|(l, c, _)| (*l, *c)).collect();
    assert_eq!(at, vec![(8, 8), (13, 8)], "{errs:#?}");
    // Without the tcp listeners, every algorithm and hash_key is fine on http.
    for b in ["ewma", "sticky", "hash"] {
        ok(&format!(
            "[listeners.web]\nbind = \"127.0.0.1:8080\"\npool = \"app\"\n[pools.app]\nbalance = \"{b}\"\nhash_key = \"header:x\"\n"
        ));
    }
}

#[test]
fn a_missing_tcp_pool_is_one_error_not_two() {
    let src = "[listeners.pg]\nbind = \"127.0.0.1:5433\"\nprotocol = \"tcp\"\npool = \"nope\"\n[pools.db]\nbalance = \"ewma\"\n";
    one_error(src, 4, 8, "no pool named `nope`");
}
