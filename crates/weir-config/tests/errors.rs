//! Every error kind is reported, at the exact span, and none hides another.

mod common;
use common::*;

#[test]
fn five_errors_in_one_file_are_all_reported() {
    let src = r#"[listeners.web]
bnd = "0.0.0.0:8080"
protocol = "http"

[routes.shop]
listener = "web"
pool = "missing"

[pools.app]
connect_timeout = "5"
endpoints = [
  { addr = "127.0.0.1", weight = 0 },
]
"#;
    let errs = errors(src);
    let at: Vec<(usize, usize)> = errs.iter().map(|(l, c, _)| (*l, *c)).collect();
    assert_eq!(
        at,
        vec![(2, 1), (7, 8), (10, 19), (12, 12), (12, 34)],
        "{errs:#?}"
    );
    assert!(errs[0]
        .2
        .contains("unknown key `bnd`, did you mean `bind`?"));
    assert!(errs[1].2.contains("no pool named `missing`"));
    assert!(errs[2].2.contains("missing unit"));
    assert!(errs[3].2.contains("missing port"));
    assert!(errs[4].2.contains("weight = 0 is out of range"));
}

#[test]
fn all_syntax_errors_are_reported_with_semantic_ones() {
    let src = "[listeners.web]\nbind = \nx = \"open\n[pools.app]\nbalance = \"round_robin\"\nmax_conn = -1\n";
    let errs = errors(src);
    let at: Vec<(usize, usize)> = errs.iter().map(|(l, c, _)| (*l, *c)).collect();
    // Two syntax errors (lines 2, 3); nothing extra on those lines; the
    // out-of-range value on line 6 is still found.
    assert_eq!(at, vec![(2, 8), (3, 10), (6, 12)], "{errs:#?}");
    assert_eq!(errs[0].2, "missing value after `=`");
}

#[test]
fn duplicate_keys_and_tables_are_syntax_errors() {
    let errs = errors("[pools.a]\nmax_conn = 1\nmax_conn = 2\n[pools.a]\n");
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert!(errs.iter().all(|(_, _, m)| m.contains("duplicate")));
}

#[test]
fn unknown_keys_at_every_level() {
    one_error(
        "[globl]\n",
        1,
        2,
        "unknown key `globl`, did you mean `global`?",
    );
    one_error("[listener.web]\n", 1, 2, "did you mean `listeners`?");
    one_error(
        "[global]\ndrain = \"1s\"\n",
        2,
        1,
        "did you mean `drain_grace`?",
    );
    one_error(
        "[admin]\nlisten_addr = \"127.0.0.1:1\"\n",
        2,
        1,
        "did you mean `listen`?",
    );
    one_error(
        &format!("{BASE}[routes.r]\nlistener = \"web\"\npool = \"app\"\npath = \"/\"\n"),
        9,
        1,
        "unknown key `path`",
    );
    one_error(
        &format!("{BASE}max_con = 1\n"),
        6,
        1,
        "did you mean `max_conn`?",
    );
    one_error(
        &format!("{BASE}[pools.app.health]\nintreval = \"2s\"\n"),
        7,
        1,
        "did you mean `interval`?",
    );
    one_error(
        &format!("{BASE}[pools.app.retry]\ntries = 1\n"),
        7,
        1,
        "unknown key `tries` (expected one of: attempts, buffer, per_try_timeout, ",
    );
    one_error(
        "[pools.app]\nendpoints = [{ adr = \"127.0.0.1:1\" }]\n",
        2,
        16,
        "unknown key `adr`, did you mean `addr`?",
    );
}

#[test]
fn wrong_value_types() {
    one_error(
        "[listeners.web]\nbind = 8080\n",
        2,
        8,
        "expected a string, found an integer",
    );
    one_error(
        &format!("{BASE}max_conn = \"4\"\n"),
        6,
        12,
        "expected an integer, found a string",
    );
    one_error(
        &format!("{BASE}max_conn = 4.0\n"),
        6,
        12,
        "expected an integer, found a float",
    );
    one_error(
        "listeners = 3\n",
        1,
        13,
        "expected a table, found an integer",
    );
    one_error(
        "[listeners]\nweb = \"x\"\n",
        2,
        7,
        "expected a table [listeners.web], found a string",
    );
    one_error(
        "[pools.app]\nendpoints = \"127.0.0.1:1\"\n",
        2,
        13,
        "expected an array, found a string",
    );
    one_error(
        "[pools.app]\nendpoints = [\"127.0.0.1:1\"]\n",
        2,
        14,
        "write { addr = \"127.0.0.1:1\" }",
    );
    one_error(
        &format!("{BASE}idle_timeout = 4\n"),
        6,
        16,
        "expected a duration string like \"5s\", found an integer",
    );
}

#[test]
fn bad_socket_addresses() {
    one_error(
        "[listeners.web]\nbind = \"0.0.0.0\"\n",
        2,
        8,
        "missing port",
    );
    one_error(
        "[listeners.web]\nbind = \"0.0.0.0:99999\"\n",
        2,
        8,
        "not a port number",
    );
    one_error("[admin]\nlisten = \"::1:9901\"\n", 2, 10, "brackets");
    one_error(
        "[pools.app]\nendpoints = [{ addr = \"backend..local:80\" }]\n",
        2,
        23,
        "empty label",
    );
    one_error(
        "[pools.app]\nendpoints = [{ addr = \"backend.local\" }]\n",
        2,
        23,
        "missing port",
    );
    one_error(
        "[pools.app]\nendpoints = [{ srv = \"backend.local\" }]\n",
        2,
        22,
        "_SERVICE._PROTO.NAME",
    );
    one_error(
        "[listeners.web]\nbind = \"localhost:80\"\n",
        2,
        8,
        "a bind address is IP:PORT",
    );
    one_error(
        "[pools.app]\nendpoints = [{ addr = \"0.0.0.0:80\" }]\n",
        2,
        23,
        "unspecified",
    );
}

#[test]
fn bad_durations() {
    for (value, why) in [
        ("\"5\"", "missing unit"),
        ("\"-1s\"", "negative"),
        ("\"1.5s\"", "fractions"),
        ("\"0s\"", "must be greater than 0"),
        ("\"0ms\"", "must be greater than 0"),
        ("\"5 s\"", "unknown unit"),
        ("\"10d\"", "unknown unit"),
        ("\"9000h\"", "too large"),
    ] {
        one_error(&format!("{BASE}queue_timeout = {value}\n"), 6, 17, why);
    }
    // A zero drain grace is meaningful: stop without waiting.
    assert!(weir_config::parse_str("[global]\ndrain_grace = \"0s\"\n", "t").is_ok());
}

#[test]
fn missing_references_suggest_existing_names() {
    let src = format!("{BASE}\n[routes.r]\nlistener = \"wbe\"\npool = \"ap\"\n");
    let errs = errors(&src);
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert_eq!((errs[0].0, errs[0].1), (8, 12));
    assert!(
        errs[0]
            .2
            .contains("no listener named `wbe`, did you mean `web`?"),
        "{}",
        errs[0].2
    );
    assert!(
        errs[1]
            .2
            .contains("no pool named `ap`, did you mean `app`?"),
        "{}",
        errs[1].2
    );

    one_error(
        &format!("{BASE}[listeners.b]\nbind = \"127.0.0.1:1\"\npool = \"zzz\"\n"),
        8,
        8,
        "(defined pools: app)",
    );
    one_error(
        "[listeners.b]\nbind = \"127.0.0.1:1\"\npool = \"x\"\n",
        3,
        8,
        "no pools are defined",
    );
}

#[test]
fn tcp_listener_needs_a_pool_and_takes_no_routes() {
    one_error(
        "[listeners.pg]\nbind = \"127.0.0.1:5433\"\nprotocol = \"tcp\"\n",
        1,
        1,
        "tcp listener `pg` has no `pool`",
    );
    let src = format!(
        "{BASE}[listeners.pg]\nbind = \"127.0.0.1:5433\"\nprotocol = \"tcp\"\npool = \"app\"\n[routes.r]\nlistener = \"pg\"\npool = \"app\"\n"
    );
    one_error(&src, 11, 12, "which is a tcp listener");
}

#[test]
fn required_keys() {
    one_error(
        "[listeners.web]\nprotocol = \"http\"\n",
        1,
        1,
        "listener `web` has no `bind`",
    );
    one_error(
        &format!("{BASE}[routes.r]\npool = \"app\"\n"),
        6,
        1,
        "route `r` has no `listener`",
    );
    one_error(
        &format!("{BASE}[routes.r]\nlistener = \"web\"\n"),
        6,
        1,
        "route `r` has no `pool`",
    );
    one_error(
        "[pools.app]\nendpoints = [{ weight = 2 }]\n",
        2,
        14,
        "endpoint has no `addr`",
    );
}

#[test]
fn duplicate_binds_point_at_the_second() {
    let src =
        "[listeners.b]\nbind = \"127.0.0.1:8080\"\n[listeners.a]\nbind = \"127.0.0.1:8080\"\n";
    one_error(src, 4, 8, "already used by listener `b`");
    let src = "[listeners.a]\nbind = \"0.0.0.0:8080\"\n[listeners.b]\nbind = \"127.0.0.1:8080\"\n";
    one_error(src, 4, 8, "overlaps listener `a` on 0.0.0.0:8080");
    one_error(
        "[listeners.a]\nbind = \"127.0.0.1:9901\"\n",
        2,
        8,
        "already used by the admin API",
    );
    // Different ports, different families, and port 0 never collide.
    ok("[listeners.a]\nbind = \"0.0.0.0:8080\"\n[listeners.b]\nbind = \"[::]:8080\"\n[listeners.c]\nbind = \"127.0.0.1:0\"\n[listeners.d]\nbind = \"127.0.0.1:0\"\n");
}

#[test]
fn duplicate_routes() {
    let src = format!(
        "{BASE}[routes.one]\nlistener = \"web\"\nhost = \"A.example.com\"\npool = \"app\"\n[routes.two]\nlistener = \"web\"\nhost = \"a.example.com\"\npath_prefix = \"/\"\npool = \"app\"\n"
    );
    one_error(
        &src,
        10,
        9,
        "same listener, host and path_prefix as route `one`",
    );
    // Different prefixes are fine: longest prefix wins.
    ok(&format!(
        "{BASE}[routes.one]\nlistener = \"web\"\npool = \"app\"\n[routes.two]\nlistener = \"web\"\npath_prefix = \"/api\"\npool = \"app\"\n"
    ));
}

#[test]
fn out_of_range_values() {
    one_error(
        "[listeners.web]\nbind = \"127.0.0.1:1\"\nmax_header_bytes = 100\n",
        3,
        20,
        "between 8192 and 1048576",
    );
    one_error(
        &format!("{BASE}max_conn = -1\n"),
        6,
        12,
        "between 0 and 1000000",
    );
    one_error(
        &format!("{BASE}overflow_status = 500\n"),
        6,
        19,
        "must be 429 or 503",
    );
    one_error(
        &format!("{BASE}[pools.app.health]\nfall = 101\n"),
        7,
        8,
        "between 1 and 100",
    );
    one_error(
        &format!("{BASE}[pools.app.retry]\nattempts = 11\n"),
        7,
        12,
        "between 0 and 10",
    );
    one_error(
        &format!("{BASE}[pools.app.health]\nexpect_status = \"399-200\"\n"),
        7,
        17,
        "is empty",
    );
    one_error(
        &format!("{BASE}[pools.app.health]\nexpect_status = 99\n"),
        7,
        17,
        "not an HTTP status code",
    );
    one_error(
        &format!("{BASE}balance = \"fastest\"\n"),
        6,
        11,
        "expected one of: round_robin, least_conn",
    );
    one_error(
        &format!("{BASE}[pools.app.health]\ncheck = \"htp\"\n"),
        7,
        9,
        "did you mean `http`?",
    );
}

#[test]
fn limits_that_contradict_each_other() {
    one_error(
        &format!("{BASE}max_queue = 10\n"),
        6,
        13,
        "max_queue needs max_conn",
    );
    one_error(
        &format!("{BASE}[pools.app.health]\ninterval = \"1s\"\ntimeout = \"1s\"\n"),
        8,
        11,
        "must be shorter than interval",
    );
    // Only interval written: the default timeout (500ms) is too long for it.
    one_error(
        &format!("{BASE}[pools.app.health]\ninterval = \"200ms\"\n"),
        7,
        12,
        "must be shorter",
    );
}

#[test]
fn routes_host_and_path_checks() {
    let route =
        |extra: &str| format!("{BASE}[routes.r]\nlistener = \"web\"\npool = \"app\"\n{extra}\n");
    one_error(
        &route("host = \"a.example.com:8080\""),
        9,
        8,
        "must not include a port",
    );
    one_error(&route("host = \"a.*.com\""), 9, 8, "first label");
    one_error(
        &route("path_prefix = \"api\""),
        9,
        15,
        "must start with `/`",
    );
    one_error(&route("path_prefix = \"/a?b\""), 9, 15, "not allowed");
}

#[test]
fn resource_names_are_restricted() {
    one_error(
        "[listeners.\"my web\"]\nbind = \"127.0.0.1:1\"\n",
        1,
        12,
        "invalid listener name `my web`",
    );
    one_error("[pools.\"a.b\"]\n", 1, 8, "invalid pool name");
    ok("[pools.Ab_9-x]\n");
}

#[test]
fn duplicate_endpoints_in_a_pool() {
    let src = "[pools.app]\nendpoints = [\n  { addr = \"127.0.0.1:1\" },\n  { addr = \"127.0.0.1:1\", weight = 2 },\n]\n";
    one_error(
        src,
        4,
        12,
        "duplicate endpoint 127.0.0.1:1 in pool `app` (already listed on line 3)",
    );
    // The same address in two pools is fine.
    ok("[pools.a]\nendpoints = [{ addr = \"127.0.0.1:1\" }]\n[pools.b]\nendpoints = [{ addr = \"127.0.0.1:1\" }]\n");
}

#[test]
fn errors_come_before_warnings_in_source_order() {
    // The warning (line 10) is written before the error (line 12).
    let src = format!("{BASE}[listeners.pg]\nbind = \"127.0.0.1:5433\"\nprotocol = \"tcp\"\npool = \"app\"\nheader_timeout = \"1s\"\n[listeners.x]\nbind = \"nope\"\n");
    let d = diags(&src);
    let kinds: Vec<_> = d.iter().map(|d| (d.severity, d.line)).collect();
    use weir_config::Severity::*;
    assert_eq!(kinds, vec![(Error, 12), (Warning, 10)]);
}
