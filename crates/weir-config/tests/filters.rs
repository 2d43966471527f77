//! Route filters (`[filters.NAME]`, a route's `filters`): the kinds headers, rewrite,
//! redirect, ip_allow / ip_deny and body_limit read into the model, and every bad value is
//! an error at its line and column. `BASE` has five lines; the route takes lines 6-10,
//! the filter starts on line 11 (`kind` on line 12, its first key on line 13).

mod common;
use common::*;

use weir_config::filter::*;

/// BASE, a route `r` with `filters = [chain]` and one filter `f` with these lines.
fn with(chain: &str, lines: &[&str]) -> String {
    let mut s = BASE.to_string();
    s.push_str(&format!(
        "[routes.r]\nlistener = \"web\"\npool = \"app\"\nfilters = {chain}\n\n[filters.f]\n"
    ));
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}

fn filter(lines: &[&str]) -> Filter {
    ok(&with("[\"f\"]", lines)).config.filters["f"].clone()
}

#[test]
fn each_kind_reads_into_its_model() {
    let Filter::Headers(h) = filter(&[
        "kind = \"headers\"",
        "request_set = { \"X-Env\" = \"prod\", \"X-Client\" = \"{client_ip}:{{x}}\" }",
        "response_remove = [\"Server\"]",
        "request_id = \"X-Request-Id\"",
    ]) else {
        panic!()
    };
    let set = |n: &str| {
        h.request
            .set
            .iter()
            .find(|(k, _)| k == n)
            .unwrap()
            .1
            .clone()
    };
    assert_eq!(set("x-env").literal(), Some("prod"));
    assert_eq!(
        set("x-client").pieces,
        vec![Piece::Var(Var::ClientIp), Piece::Text(":{x}".into())]
    );
    assert_eq!(h.response.remove, ["server"]);
    assert_eq!(h.request_id.as_deref(), Some("x-request-id"));

    let Filter::Rewrite(r) = filter(&[
        "kind = \"rewrite\"",
        "strip_prefix = \"/api\"",
        "path_regex = \"^/(.*)$\"",
        "path_replacement = \"/v1/$1\"",
        "host = \"internal:8080\"",
    ]) else {
        panic!()
    };
    assert_eq!(r.strip_prefix.as_deref(), Some("/api"));
    assert_eq!(r.path_regex.unwrap().replacement, "/v1/$1");
    assert_eq!(r.host.as_deref(), Some("internal:8080"));

    let Filter::Redirect(r) = filter(&[
        "kind = \"redirect\"",
        "scheme = \"https\"",
        "port = 8443",
        "status = 308",
        "query = \"drop\"",
    ]) else {
        panic!()
    };
    assert_eq!(
        (r.scheme, r.port, r.status, r.keep_query),
        (Some(RedirectScheme::Https), Some(8443), 308, false)
    );

    let Filter::IpDeny(l) = filter(&[
        "kind = \"ip_deny\"",
        "addresses = [\"10.0.0.0/8\", \"::1\"]",
    ]) else {
        panic!()
    };
    assert_eq!(l.addresses.len(), 2);

    for (v, n) in [
        ("\"10MiB\"", 10 << 20),
        ("2048", 2048),
        ("\"1GB\"", 1_000_000_000),
        ("\"512k\"", 512 << 10),
    ] {
        let Filter::BodyLimit(b) = filter(&["kind = \"body_limit\"", &format!("max_bytes = {v}")])
        else {
            panic!()
        };
        assert_eq!(b.max_bytes, n, "{v}");
    }
}

#[test]
fn chains_name_filters_that_exist_once() {
    one_error(
        &with(
            "[\"f\", \"g\"]",
            &["kind = \"ip_allow\"", "addresses = [\"::1\"]"],
        ),
        9,
        17,
        "no filter named `g`",
    );
    one_error(
        &with(
            "[\"f\", \"f\"]",
            &["kind = \"ip_allow\"", "addresses = [\"::1\"]"],
        ),
        9,
        17,
        "already in this chain",
    );
    // A filter that does not read is reported once, where it is written.
    one_error(
        &with(
            "[\"f\"]",
            &["kind = \"ip_allow\"", "addresses = [\"nope\"]"],
        ),
        13,
        14,
        "invalid address \"nope\"",
    );
    // A misspelt name gets a suggestion.
    let src = with(
        "[\"ff\"]",
        &["kind = \"ip_allow\"", "addresses = [\"::1\"]"],
    );
    one_error(&src, 9, 12, "did you mean `f`?");
}

#[test]
fn kinds_and_keys_are_checked() {
    one_error(
        &with("[\"f\"]", &["kind = \"header\""]),
        12,
        8,
        "unknown filter kind \"header\", did you mean `headers`?",
    );
    one_error(
        &with("[\"f\"]", &["addresses = [\"::1\"]"]),
        11,
        1,
        "filter `f` has no `kind`",
    );
    one_error(
        &with("[\"f\"]", &["kind = \"rewrite\"", "strip_prefx = \"/a\""]),
        13,
        1,
        "unknown key `strip_prefx`, did you mean `strip_prefix`?",
    );
    one_error(
        &with("[\"f\"]", &["kind = \"rewrite\""]),
        11,
        1,
        "this rewrite filter changes nothing",
    );
    one_error(
        &with("[\"f\"]", &["kind = \"headers\""]),
        11,
        1,
        "this headers filter changes nothing",
    );
}

#[test]
fn header_values_never_carry_line_breaks_and_framing_is_not_theirs() {
    let cases: &[(&str, usize, &str)] = &[
        (
            "request_set = { \"X-A\" = \"a\\r\\nX-Injected: 1\" }",
            25,
            "cannot be in a header value",
        ),
        (
            "request_set = { \"X-A\" = \"{clientip}\" }",
            25,
            "did you mean `client_ip`?",
        ),
        (
            "request_set = { \"X-A\" = \"{host\" }",
            25,
            "without its `}`",
        ),
        (
            "request_set = { \"Content-Length\" = \"1\" }",
            17,
            "may not use `Content-Length`",
        ),
        (
            "response_remove = [\"Transfer-Encoding\"]",
            20,
            "may not use",
        ),
        (
            "request_set = { \"Host\" = \"x\" }",
            17,
            "a rewrite filter's `host`",
        ),
        (
            "request_add = { \"Bad Name\" = \"x\" }",
            17,
            "not a valid header name",
        ),
        ("request_id = \"X Id\"", 14, "not a valid header name"),
    ];
    for (line, col, needle) in cases {
        one_error(
            &with("[\"f\"]", &["kind = \"headers\"", line]),
            13,
            *col,
            needle,
        );
    }
}

#[test]
fn rewrites_and_redirects_check_paths_regexes_and_statuses() {
    let rw = |l: &[&str]| {
        let mut v = vec!["kind = \"rewrite\""];
        v.extend_from_slice(l);
        with("[\"f\"]", &v)
    };
    one_error(
        &rw(&["strip_prefix = \"api\""]),
        13,
        16,
        "must start with `/`",
    );
    one_error(
        &rw(&["add_prefix = \"/a?b\""]),
        13,
        14,
        "'?' is not allowed",
    );
    one_error(
        &rw(&["replace_path = \"/x\"", "strip_prefix = \"/a\""]),
        13,
        1,
        "replace_path replaces the whole path",
    );
    one_error(
        &rw(&["path_regex = \"(\""]),
        13,
        14,
        "needs a path_replacement",
    );
    one_error(
        &rw(&["path_regex = \"(\"", "path_replacement = \"/\""]),
        13,
        14,
        "invalid path_regex",
    );
    one_error(
        &rw(&["path_regex = \"(a)\"", "path_replacement = \"/$2\""]),
        14,
        20,
        "`$2` is not a capture",
    );
    let huge = format!("path_regex = \"{}\"", "a".repeat(2000));
    one_error(
        &rw(&[&huge, "path_replacement = \"/\""]),
        13,
        14,
        "at most 1024",
    );
    one_error(
        &rw(&[
            "path_regex = \"(\\\\w{50}){50}\"",
            "path_replacement = \"/\"",
        ]),
        13,
        14,
        "compiles to more than",
    );
    one_error(&rw(&["host = \"a b\""]), 13, 8, "not allowed in a Host");

    let rd = |l: &[&str]| {
        let mut v = vec!["kind = \"redirect\""];
        v.extend_from_slice(l);
        with("[\"f\"]", &v)
    };
    one_error(
        &rd(&["status = 200", "scheme = \"https\""]),
        13,
        10,
        "is not a redirect",
    );
    one_error(&rd(&["scheme = \"ftp\""]), 13, 10, "invalid scheme \"ftp\"");
    one_error(&rd(&["port = 0"]), 13, 8, "out of range");
    one_error(&rd(&["host = \"a:80\""]), 13, 8, "give the port as `port`");
    one_error(&rd(&["query = \"keep\""]), 11, 1, "names no target");
    one_error(
        &rd(&[
            "path = \"/a\"",
            "path_regex = \"x\"",
            "path_replacement = \"/y\"",
        ]),
        13,
        1,
        "either path or path_regex",
    );
}

#[test]
fn address_lists_and_body_limits() {
    let ip = |v: &str| {
        with(
            "[\"f\"]",
            &["kind = \"ip_allow\"", &format!("addresses = {v}")],
        )
    };
    one_error(
        &ip("[\"10.0.0.1/8\"]"),
        13,
        14,
        "did you mean \"10.0.0.0/8\"?",
    );
    one_error(&ip("[\"10.0.0.0/33\"]"), 13, 14, "invalid address");
    one_error(&ip("[]"), 13, 13, "addresses is empty");
    one_error(&ip("\"10.0.0.0/8\""), 13, 13, "expected an array");
    one_error(
        &with("[\"f\"]", &["kind = \"ip_deny\""]),
        11,
        1,
        "has no `addresses`",
    );

    let bl = |v: &str| {
        with(
            "[\"f\"]",
            &["kind = \"body_limit\"", &format!("max_bytes = {v}")],
        )
    };
    one_error(&bl("\"10 parsecs\""), 13, 13, "unknown unit");
    one_error(&bl("-1"), 13, 13, "negative");
    one_error(&bl("\"99999999999GiB\""), 13, 13, "too large");
    one_error(&bl("true"), 13, 13, "expected a size");
}

#[test]
fn filters_are_for_http_routes() {
    let src = r#"[listeners.tls]
bind = "127.0.0.1:8443"
protocol = "tcp"
sni_routing = true

[pools.app]
endpoints = [{ addr = "127.0.0.1:9001" }]

[routes.r]
listener = "tls"
sni = "a.example"
pool = "app"
filters = ["f"]

[filters.f]
kind = "ip_allow"
addresses = ["::1"]
"#;
    one_error(src, 13, 12, "filters apply to http routes only");
}

#[test]
fn a_tcp_listener_takes_only_address_lists() {
    let src = |listener_extra: &str, kind: &str| {
        format!(
            r#"[listeners.db]
bind = "127.0.0.1:5432"
protocol = "tcp"
pool = "app"
{listener_extra}

[pools.app]
endpoints = [{{ addr = "127.0.0.1:9001" }}]

[filters.f]
{kind}
"#
        )
    };
    let allow = "kind = \"ip_allow\"\naddresses = [\"10.0.0.0/8\"]";
    let l = ok(&src("filters = [\"f\"]", allow));
    assert_eq!(l.config.listeners["db"].filters, ["f"]);
    one_error(
        &src(
            "filters = [\"f\"]",
            "kind = \"rewrite\"\nstrip_prefix = \"/a\"",
        ),
        5,
        12,
        "a tcp listener takes only ip_allow and ip_deny",
    );
    one_error(
        &src("filters = [\"g\"]", allow),
        5,
        12,
        "no filter named `g`",
    );
    let http = src("filters = [\"f\"]", allow).replace("protocol = \"tcp\"", "protocol = \"http\"");
    one_error(&http, 5, 12, "its requests take filters on their routes");
}
