//! Health checks, passive ejection, retries and connection caps: the keys of
//! `[pools.NAME.health]`, `[pools.NAME.retry]`, and `max_conn_age` /
//! `max_requests_per_conn` of `[pools.NAME]`.
//!
//! `BASE` has five lines. Pool keys are appended on line 6; a `[health]` or
//! `[retry]` header goes on line 6 and its keys from line 7 on. A value's
//! column is the key's length plus 4 (`key = `).

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

fn table(name: &str, lines: &[&str]) -> String {
    let header = format!("[pools.app.{name}]");
    let mut all = vec![header.as_str()];
    all.extend_from_slice(lines);
    with(&all)
}

fn health_src(lines: &[&str]) -> String {
    table("health", lines)
}

fn retry_src(lines: &[&str]) -> String {
    table("retry", lines)
}

/// The pool of a valid source that must give no warning.
fn pool_of(src: &str) -> Pool {
    let l = ok(src);
    assert!(l.warnings.is_empty(), "{:#?}", l.warnings);
    l.config.pools["app"].clone()
}

fn health(lines: &[&str]) -> Health {
    pool_of(&health_src(lines)).health
}

fn retry(lines: &[&str]) -> Retry {
    pool_of(&retry_src(lines)).retry
}

/// The warnings of a valid source, as (line, col, message).
fn warnings(src: &str) -> Vec<(usize, usize, String)> {
    ok(src)
        .warnings
        .into_iter()
        .map(|w| {
            assert_eq!(w.severity, Severity::Warning);
            (w.line, w.col, w.message)
        })
        .collect()
}

// ---- defaults -----------------------------------------------------------

#[test]
fn new_keys_have_their_documented_defaults() {
    let p = pool_of(BASE);
    let h = &p.health;
    assert_eq!((h.host.as_deref(), h.expect_body.as_deref()), (None, None));
    assert_eq!(h.initial, InitialState::Healthy);
    assert_eq!(h.eject_after, 5);
    assert!(h.eject_status.is_empty());
    assert_eq!(h.eject_time, Duration::from_secs(10));
    assert_eq!(h.max_ejection_percent, 50);
    assert_eq!(h.no_healthy, NoHealthy::FailOpen);
    let r = &p.retry;
    assert_eq!(r.attempts, 2);
    assert_eq!(r.buffer, 64 * 1024);
    assert_eq!(r.per_try_timeout, None);
    assert!(r.on_status.is_empty());
    assert_eq!((r.budget_percent, r.budget_min_per_sec), (20, 3));
    assert_eq!((p.max_conn_age, p.max_requests_per_conn), (None, 0));

    // Empty tables give the same, and match `Default` and `defaults`.
    assert_eq!(health(&[]), Health::default());
    assert_eq!(retry(&[]), Retry::default());
    assert_eq!(p.health, Health::default());
    assert_eq!(p.retry, Retry::default());
    assert_eq!(defaults::EJECT_AFTER, 5);
    assert_eq!(defaults::EJECT_TIME, Duration::from_secs(10));
    assert_eq!(defaults::MAX_EJECTION_PERCENT, 50);
    assert_eq!(defaults::RETRY_BUFFER, 65536);
    assert_eq!(defaults::RETRY_BUDGET_PERCENT, 20);
    assert_eq!(defaults::RETRY_BUDGET_MIN_PER_SEC, 3);
}

// ---- valid values land in the model ---------------------------------------

#[test]
fn a_pool_using_every_new_key_is_accepted_without_warnings() {
    let src = r#"[listeners.web]
bind = "127.0.0.1:8080"
pool = "app"

[pools.app]
endpoints = [{ addr = "127.0.0.1:9001" }, { addr = "127.0.0.1:9002" }]
response_timeout = "10s"
max_conn_age = "5m"
max_requests_per_conn = 1000

[pools.app.health]
check = "http"
path = "/ready"
expect_status = "200-299"
host = "app.internal:8080"
expect_body = "ok"
initial = "unhealthy"
eject_after = 3
eject_status = [502, 503, 504]
eject_time = "30s"
max_ejection_percent = 34
no_healthy = "fail_closed"

[pools.app.retry]
attempts = 3
buffer = 1048576
per_try_timeout = "2s"
on_status = [503]
budget_percent = 10
budget_min_per_sec = 5
"#;
    let p = pool_of(src);
    assert_eq!(p.max_conn_age, Some(Duration::from_secs(300)));
    assert_eq!(p.max_requests_per_conn, 1000);
    let h = &p.health;
    assert_eq!(h.check, HealthCheck::Http);
    assert_eq!((h.path.as_str(), h.expect_status), ("/ready", (200, 299)));
    assert_eq!(h.host.as_deref(), Some("app.internal:8080"));
    assert_eq!(h.expect_body.as_deref(), Some("ok"));
    assert_eq!(h.initial, InitialState::Unhealthy);
    assert_eq!(h.eject_after, 3);
    assert_eq!(h.eject_status, vec![502, 503, 504]);
    assert_eq!(h.eject_time, Duration::from_secs(30));
    assert_eq!(h.max_ejection_percent, 34);
    assert_eq!(h.no_healthy, NoHealthy::FailClosed);
    assert_eq!(
        p.retry,
        Retry {
            attempts: 3,
            buffer: 1048576,
            per_try_timeout: Some(Duration::from_secs(2)),
            on_status: vec![503],
            on_grpc_status: vec![],
            budget_percent: 10,
            budget_min_per_sec: 5,
        }
    );
}

#[test]
fn health_values_and_their_bounds() {
    for (s, state) in [
        ("healthy", InitialState::Healthy),
        ("unhealthy", InitialState::Unhealthy),
    ] {
        assert_eq!(health(&[&format!("initial = \"{s}\"")]).initial, state);
    }
    for (s, policy) in [
        ("fail_open", NoHealthy::FailOpen),
        ("fail_closed", NoHealthy::FailClosed),
    ] {
        assert_eq!(
            health(&[&format!("no_healthy = \"{s}\"")]).no_healthy,
            policy
        );
    }
    // 0 = never eject.
    assert_eq!(health(&["eject_after = 0"]).eject_after, 0);
    assert_eq!(health(&["eject_after = 1000"]).eject_after, 1000);
    assert_eq!(
        health(&["max_ejection_percent = 0"]).max_ejection_percent,
        0
    );
    assert_eq!(
        health(&["max_ejection_percent = 100"]).max_ejection_percent,
        100
    );
    assert_eq!(
        health(&["eject_status = [500, 599]"]).eject_status,
        vec![500, 599]
    );
    assert_eq!(
        health(&["eject_status = []"]).eject_status,
        Vec::<u16>::new()
    );
    // Order as written.
    assert_eq!(
        health(&["eject_status = [\n  504,\n  502,\n]"]).eject_status,
        vec![504, 502]
    );
    assert_eq!(
        health(&["eject_time = \"250ms\""]).eject_time,
        Duration::from_millis(250)
    );
}

#[test]
fn health_host_accepts_names_ips_and_ports_as_written() {
    for host in [
        "example.com",
        "Example.COM",
        "api.example.com:8443",
        "localhost",
        "10.0.0.7",
        "10.0.0.7:8080",
        "[::1]",
        "[2001:db8::1]:8080",
    ] {
        let h = health(&["check = \"http\"", &format!("host = \"{host}\"")]);
        assert_eq!(h.host.as_deref(), Some(host));
    }
    let h = health(&[
        "check = \"http\"",
        "expect_body = \"\\\"status\\\": \\\"up\\\"\"",
    ]);
    assert_eq!(h.expect_body.as_deref(), Some("\"status\": \"up\""));
}

#[test]
fn retry_values_and_their_bounds() {
    assert_eq!(retry(&["buffer = 0"]).buffer, 0);
    assert_eq!(retry(&["buffer = 16777216"]).buffer, 16 * 1024 * 1024);
    assert_eq!(
        retry(&["per_try_timeout = \"500ms\""]).per_try_timeout,
        Some(Duration::from_millis(500))
    );
    assert_eq!(
        retry(&["on_status = [502, 503, 504]"]).on_status,
        vec![502, 503, 504]
    );
    assert_eq!(retry(&["on_status = []"]).on_status, Vec::<u16>::new());
    assert_eq!(retry(&["budget_percent = 0"]).budget_percent, 0);
    assert_eq!(retry(&["budget_percent = 100"]).budget_percent, 100);
    assert_eq!(retry(&["budget_min_per_sec = 0"]).budget_min_per_sec, 0);
    assert_eq!(
        retry(&["budget_min_per_sec = 1000"]).budget_min_per_sec,
        1000
    );
}

#[test]
fn connection_caps() {
    let p = pool_of(&with(&["max_conn_age = \"30s\""]));
    assert_eq!(p.max_conn_age, Some(Duration::from_secs(30)));
    assert_eq!(
        pool_of(&with(&["max_requests_per_conn = 0"])).max_requests_per_conn,
        0
    );
    assert_eq!(
        pool_of(&with(&["max_requests_per_conn = 1000000"])).max_requests_per_conn,
        1_000_000
    );
}

#[test]
fn passive_ejection_keys_apply_without_active_checks() {
    // Passive ejection watches real traffic: no warning with check = "none".
    let h = health(&[
        "check = \"none\"",
        "eject_after = 2",
        "eject_status = [503]",
        "eject_time = \"1s\"",
        "max_ejection_percent = 100",
        "no_healthy = \"fail_closed\"",
        "initial = \"unhealthy\"",
    ]);
    assert_eq!((h.eject_after, h.eject_status.as_slice()), (2, &[503][..]));
}

// ---- invalid values, at their exact position ------------------------------

#[test]
fn health_host_errors() {
    let src = |v: &str| health_src(&["check = \"http\"", &format!("host = {v}")]);
    one_error(&src("\"a b\""), 8, 8, "' ' is not allowed in a Host header");
    one_error(
        &src("\"app/x\""),
        8,
        8,
        "'/' is not allowed in a Host header",
    );
    one_error(
        &src("\"http://app\""),
        8,
        8,
        "'/' is not allowed in a Host header",
    );
    one_error(&src("\"\""), 8, 8, "health host is empty");
    one_error(&src("\"app:99999\""), 8, 8, "port `99999` is not a number");
    one_error(&src("\"app:\""), 8, 8, "port `` is not a number");
    one_error(&src("\"::1\""), 8, 8, "must be in brackets");
    one_error(&src("\"[::1\""), 8, 8, "missing `]`");
    one_error(&src("\"a..b\""), 8, 8, "empty label");
    one_error(&src("5"), 8, 8, "expected a string, found an integer");
}

#[test]
fn health_value_errors() {
    let at7 =
        |line: &str, col: usize, needle: &str| one_error(&health_src(&[line]), 7, col, needle);
    at7(
        "expect_body = \"\"",
        15,
        "expect_body is empty; omit it to accept any body",
    );
    at7(
        "expect_body = 200",
        15,
        "expected a string, found an integer",
    );
    at7(
        "initial = \"up\"",
        11,
        "invalid initial \"up\" (expected one of: healthy, unhealthy)",
    );
    at7("initial = \"helthy\"", 11, "did you mean `healthy`?");
    at7("initial = true", 11, "expected a string, found a boolean");
    at7(
        "eject_after = 1001",
        15,
        "eject_after = 1001 is out of range; it must be between 0 and 1000",
    );
    at7("eject_after = -1", 15, "between 0 and 1000");
    at7(
        "eject_after = \"5\"",
        15,
        "expected an integer, found a string",
    );
    at7(
        "eject_time = \"0s\"",
        14,
        "eject_time must be greater than 0",
    );
    at7(
        "eject_time = 10",
        14,
        "expected a duration string like \"5s\"",
    );
    at7("eject_time = \"10\"", 14, "missing unit");
    at7(
        "max_ejection_percent = 101",
        24,
        "max_ejection_percent = 101 is out of range; it must be between 0 and 100",
    );
    at7(
        "no_healthy = \"open\"",
        14,
        "invalid no_healthy \"open\" (expected one of: fail_open, fail_closed)",
    );
    at7(
        "no_healthy = \"fail_close\"",
        14,
        "did you mean `fail_closed`?",
    );
}

#[test]
fn status_list_errors_point_at_the_element() {
    // `eject_status = [` is 16 characters: the first element is at column 17.
    let at7 =
        |line: &str, col: usize, needle: &str| one_error(&health_src(&[line]), 7, col, needle);
    at7(
        "eject_status = [404]",
        17,
        "eject_status may only list server errors (500-599), found 404",
    );
    at7("eject_status = [502, 600]", 22, "found 600");
    at7(
        "eject_status = [502, 502]",
        22,
        "502 is listed twice in eject_status",
    );
    at7(
        "eject_status = [\"503\"]",
        17,
        "expected a status code (an integer from 500 to 599), found a string",
    );
    at7(
        "eject_status = 503",
        16,
        "eject_status must be an array of status codes like [502, 503], found an integer; write [503]",
    );
    at7("eject_status = \"5xx\"", 16, "found a string");

    // `on_status = [` is 13 characters.
    let at7 = |line: &str, col: usize, needle: &str| one_error(&retry_src(&[line]), 7, col, needle);
    at7(
        "on_status = [503, 429]",
        19,
        "on_status may only list server errors (500-599), found 429",
    );
    at7(
        "on_status = [503, 503]",
        19,
        "503 is listed twice in on_status",
    );
    at7("on_status = 502", 13, "write [502]");
    at7("on_status = [5.03]", 14, "found a float");
    at7(
        "on_status = [99999999999999999999]",
        14,
        "found 99999999999999999999",
    );

    // On its own line, the element's line is reported.
    one_error(
        &health_src(&["eject_status = [\n  502,\n  499,\n]"]),
        9,
        3,
        "found 499",
    );
    // Every bad element is reported, not only the first.
    let errs = errors(&retry_src(&["on_status = [404, 503, 503, 700]"]));
    let at: Vec<_> = errs.iter().map(|(l, c, _)| (*l, *c)).collect();
    assert_eq!(at, vec![(7, 14), (7, 24), (7, 29)], "{errs:#?}");
}

#[test]
fn retry_value_errors() {
    let at7 = |line: &str, col: usize, needle: &str| one_error(&retry_src(&[line]), 7, col, needle);
    at7(
        "buffer = 16777217",
        10,
        "buffer = 16777217 is out of range; it must be between 0 and 16777216",
    );
    at7("buffer = -1", 10, "between 0 and 16777216");
    at7(
        "buffer = \"64KiB\"",
        10,
        "expected an integer, found a string",
    );
    at7(
        "per_try_timeout = \"0s\"",
        19,
        "per_try_timeout must be greater than 0",
    );
    at7(
        "per_try_timeout = \"1.5s\"",
        19,
        "fractions are not supported",
    );
    at7("per_try_timeout = 2", 19, "expected a duration string");
    at7(
        "budget_percent = 101",
        18,
        "budget_percent = 101 is out of range; it must be between 0 and 100",
    );
    at7("budget_percent = -5", 18, "between 0 and 100");
    at7(
        "budget_min_per_sec = 1001",
        22,
        "budget_min_per_sec = 1001 is out of range; it must be between 0 and 1000",
    );
    at7(
        "budget_min_per_sec = 2.5",
        22,
        "expected an integer, found a float",
    );
}

#[test]
fn connection_cap_errors() {
    one_error(
        &with(&["max_conn_age = \"0s\""]),
        6,
        16,
        "max_conn_age must be greater than 0",
    );
    one_error(&with(&["max_conn_age = \"1 m\""]), 6, 16, "unknown unit");
    one_error(
        &with(&["max_requests_per_conn = 1000001"]),
        6,
        25,
        "max_requests_per_conn = 1000001 is out of range; it must be between 0 and 1000000",
    );
    one_error(
        &with(&["max_requests_per_conn = -1"]),
        6,
        25,
        "between 0 and 1000000",
    );
}

#[test]
fn misspelt_new_keys_get_a_suggestion() {
    for (src, needle) in [
        (
            health_src(&["eject_afer = 3"]),
            "unknown key `eject_afer`, did you mean `eject_after`?",
        ),
        (
            health_src(&["no_healty = \"fail_open\""]),
            "did you mean `no_healthy`?",
        ),
        (
            health_src(&["max_ejection_pct = 10"]),
            "did you mean `max_ejection_percent`?",
        ),
        (
            health_src(&["expect_bdy = \"ok\""]),
            "did you mean `expect_body`?",
        ),
        (
            retry_src(&["budget_percnt = 10"]),
            "did you mean `budget_percent`?",
        ),
        (
            retry_src(&["per_try_timout = \"1s\""]),
            "did you mean `per_try_timeout`?",
        ),
        (retry_src(&["bufer = 10"]), "did you mean `buffer`?"),
    ] {
        one_error(&src, 7, 1, needle);
    }
    one_error(
        &with(&["max_conn_ag = \"1m\""]),
        6,
        1,
        "did you mean `max_conn_age`?",
    );
    one_error(
        &with(&["max_request_per_conn = 10"]),
        6,
        1,
        "did you mean `max_requests_per_conn`?",
    );
}

#[test]
fn every_mistake_in_one_file_is_reported() {
    let src = with(&[
        "max_conn_age = \"0s\"",
        "[pools.app.health]",
        "initial = \"sick\"",
        "eject_status = [404]",
        "host = \"a b\"",
        "[pools.app.retry]",
        "buffer = 99999999",
        "on_status = [503, 503]",
    ]);
    let at: Vec<_> = errors(&src).into_iter().map(|(l, c, _)| (l, c)).collect();
    assert_eq!(
        at,
        vec![(6, 16), (8, 11), (9, 17), (10, 8), (12, 10), (13, 19)]
    );
}

// ---- rules across fields ----------------------------------------------------

#[test]
fn per_try_timeout_must_be_below_response_timeout() {
    // Against the default response_timeout (60s).
    one_error(
        &retry_src(&["per_try_timeout = \"60s\""]),
        7,
        19,
        "per_try_timeout (60s) must be shorter than the pool's response_timeout (60s)",
    );
    one_error(
        &retry_src(&["per_try_timeout = \"2m\""]),
        7,
        19,
        "must be shorter than the pool's response_timeout",
    );
    // Against the pool's own value; the error is at per_try_timeout.
    let src = with(&[
        "response_timeout = \"2s\"",
        "[pools.app.retry]",
        "per_try_timeout = \"2s\"",
    ]);
    one_error(
        &src,
        8,
        19,
        "per_try_timeout (2s) must be shorter than the pool's response_timeout (2s)",
    );
    let src = with(&[
        "response_timeout = \"2s\"",
        "[pools.app.retry]",
        "per_try_timeout = \"1999ms\"",
    ]);
    assert_eq!(
        pool_of(&src).retry.per_try_timeout,
        Some(Duration::from_millis(1999))
    );
    // A bad response_timeout is reported once, not compared with.
    let src = with(&[
        "response_timeout = \"0s\"",
        "[pools.app.retry]",
        "per_try_timeout = \"5s\"",
    ]);
    one_error(&src, 6, 20, "response_timeout must be greater than 0");
}

#[test]
fn http_check_keys_warn_without_an_http_check() {
    let keys = [
        "path = \"/ready\"",
        "expect_status = 204",
        "host = \"app.internal\"",
        "expect_body = \"ok\"",
    ];
    for check in ["tcp", "none"] {
        let mut lines = vec![format!("check = \"{check}\"")];
        lines.extend(keys.iter().map(|k| k.to_string()));
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let w = warnings(&health_src(&lines));
        let expect: Vec<(usize, usize, String)> = ["path", "expect_status", "host", "expect_body"]
            .iter()
            .enumerate()
            .map(|(i, key)| {
                (
                    8 + i,
                    1,
                    format!(
                        "{key} has no effect unless check = \"http\" (this pool has check = \"{check}\")"
                    ),
                )
            })
            .collect();
        assert_eq!(w, expect, "check = {check}");
    }
    // No check at all is check = "none".
    let w = warnings(&health_src(&["path = \"/ready\""]));
    assert_eq!(w.len(), 1, "{w:#?}");
    assert_eq!((w[0].0, w[0].1), (7, 1));
    assert!(w[0]
        .2
        .contains("path has no effect unless check = \"http\""));
    // The values are still kept.
    let mut lines = vec!["check = \"tcp\""];
    lines.extend(keys);
    let h = ok(&health_src(&lines)).config.pools["app"].health.clone();
    assert_eq!(h.path, "/ready");
    assert_eq!(h.host.as_deref(), Some("app.internal"));
    // With check = "http" they are what the check uses: no warning.
    let mut lines = vec!["check = \"http\""];
    lines.extend(keys);
    assert!(warnings(&health_src(&lines)).is_empty());
}

#[test]
fn a_wrong_value_or_check_gets_its_error_and_no_warning() {
    // The bad host is the news, not that it would have no effect.
    let d = diags(&health_src(&["check = \"tcp\"", "host = \"a b\""]));
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(
        (d[0].severity, d[0].line, d[0].col),
        (Severity::Error, 8, 8)
    );
    // A misspelt check might have meant http: no warnings on top.
    let d = diags(&health_src(&["check = \"htp\"", "path = \"/ready\""]));
    assert_eq!(d.len(), 1, "{d:#?}");
    assert!(d[0].message.contains("did you mean `http`?"));
}
