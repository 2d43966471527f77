//! Defaults, normalisation and warnings on valid configs.

mod common;
use common::*;

use std::net::SocketAddr;
use std::time::Duration;
use weir_config::*;

#[test]
fn defaults_are_applied() {
    let cfg = ok(r#"
[listeners.web]
bind = "127.0.0.1:8080"
[listeners.pg]
bind = "127.0.0.1:5433"
protocol = "tcp"
pool = "app"
[routes.r]
listener = "web"
pool = "app"
[pools.app]
"#)
    .config;
    assert_eq!(cfg.global.drain_grace, Duration::from_secs(30));
    assert_eq!(
        cfg.admin.listen,
        "127.0.0.1:9901".parse::<SocketAddr>().unwrap()
    );
    assert_eq!(cfg.admin.token_file, None);

    let web = &cfg.listeners["web"];
    assert_eq!(web.protocol, Protocol::Http);
    assert_eq!(web.pool, None);
    assert_eq!(web.header_timeout, Duration::from_secs(10));
    assert_eq!(web.idle_timeout, Duration::from_secs(60));
    assert_eq!(web.max_header_bytes, 65536);
    assert_eq!(cfg.listeners["pg"].idle_timeout, Duration::from_secs(3600));

    let r = &cfg.routes["r"];
    assert_eq!((r.host.clone(), r.path_prefix.as_str()), (None, "/"));

    let p = &cfg.pools["app"];
    assert_eq!(p.balance, Balance::RoundRobin);
    assert!(p.endpoints.is_empty());
    assert_eq!((p.max_conn, p.max_queue, p.overflow_status), (0, 0, 503));
    assert_eq!(p.queue_timeout, Duration::from_secs(5));
    assert_eq!(p.connect_timeout, Duration::from_secs(2));
    assert_eq!(p.response_timeout, Duration::from_secs(60));
    assert_eq!(p.idle_timeout, Duration::from_secs(4));
    assert_eq!(
        p.health,
        Health {
            check: HealthCheck::None,
            path: "/healthz".into(),
            expect_status: (200, 399),
            interval: Duration::from_secs(1),
            timeout: Duration::from_millis(500),
            rise: 2,
            fall: 2,
            host: None,
            expect_body: None,
            service: String::new(),
            initial: InitialState::Healthy,
            eject_after: 5,
            eject_status: vec![],
            eject_time: Duration::from_secs(10),
            max_ejection_percent: 50,
            no_healthy: NoHealthy::FailOpen,
        }
    );
    assert_eq!(
        p.retry,
        Retry {
            attempts: 2,
            buffer: 65536,
            per_try_timeout: None,
            on_status: vec![],
            on_grpc_status: vec![],
            budget_percent: 20,
            budget_min_per_sec: 3,
        }
    );
    assert_eq!((p.max_conn_age, p.max_requests_per_conn), (None, 0));
    assert_eq!(
        (p.protocol, p.max_streams_per_conn),
        (UpstreamProtocol::Http1, 100)
    );
}

#[test]
fn endpoint_weight_defaults_to_one_and_order_is_kept() {
    let cfg = ok("[pools.app]\nendpoints = [{ addr = \"127.0.0.2:2\" }, { addr = \"[::1]:1\", weight = 1000 }]\n").config;
    let eps = &cfg.pools["app"].endpoints;
    assert_eq!(
        eps[0],
        Endpoint {
            addr: "127.0.0.2:2".parse().unwrap(),
            weight: 1
        }
    );
    assert_eq!(
        eps[1],
        Endpoint {
            addr: "[::1]:1".parse().unwrap(),
            weight: 1000
        }
    );
}

#[test]
fn array_of_tables_endpoints_work_too() {
    let cfg = ok("[[pools.app.endpoints]]\naddr = \"127.0.0.1:1\"\n[[pools.app.endpoints]]\naddr = \"127.0.0.1:2\"\nweight = 5\n").config;
    assert_eq!(cfg.pools["app"].endpoints.len(), 2);
    assert_eq!(cfg.pools["app"].endpoints[1].weight, 5);
}

#[test]
fn host_patterns_are_normalised() {
    let route = |host: &str| {
        let src =
            format!("{BASE}[routes.r]\nlistener = \"web\"\npool = \"app\"\nhost = \"{host}\"\n");
        ok(&src).config.routes["r"].host.clone().unwrap()
    };
    assert_eq!(route("LB.Foo.COM"), HostMatch::Exact("lb.foo.com".into()));
    assert_eq!(route("*.Foo.com"), HostMatch::Suffix(".foo.com".into()));
    assert_eq!(route("10.0.0.1"), HostMatch::Exact("10.0.0.1".into()));
}

#[test]
fn explicit_values_are_kept() {
    let cfg = ok(r#"
[global]
drain_grace = "2m"
[admin]
listen = "127.0.0.1:19901"
[listeners.web]
bind = "[::1]:8080"
pool = "app"
header_timeout = "250ms"
idle_timeout = "1h"
max_header_bytes = 8192
[routes.api]
listener = "web"
path_prefix = "/api/"
pool = "app"
[pools.app]
connect_timeout = "100ms"
response_timeout = "2m"
idle_timeout = "1s"
[pools.app.health]
expect_status = 204
"#)
    .config;
    assert_eq!(cfg.global.drain_grace, Duration::from_secs(120));
    assert_eq!(cfg.admin.listen.port(), 19901);
    let l = &cfg.listeners["web"];
    assert_eq!(l.pool.as_deref(), Some("app"));
    assert_eq!(
        (l.header_timeout, l.idle_timeout, l.max_header_bytes),
        (Duration::from_millis(250), Duration::from_secs(3600), 8192)
    );
    assert_eq!(cfg.routes["api"].path_prefix, "/api/");
    let p = &cfg.pools["app"];
    assert_eq!(p.connect_timeout, Duration::from_millis(100));
    assert_eq!(p.health.expect_status, (204, 204));
}

#[test]
fn every_feature_is_enforced_so_nothing_warns() {
    let l = ok(&format!(
        "[admin]\ntoken_file = \"/t\"\n{BASE}balance = \"p2c\"\nmax_conn = 4\nmax_queue = 10\nqueue_timeout = \"1s\"\noverflow_status = 429\n[pools.app.health]\ncheck = \"tcp\"\n[pools.app.retry]\nattempts = 1\n"
    ));
    assert!(l.warnings.is_empty(), "{:#?}", l.warnings);
    // The values are still validated and kept.
    let p = &l.config.pools["app"];
    assert_eq!(
        (p.max_conn, p.max_queue, p.overflow_status, p.balance),
        (4, 10, 429, Balance::P2c)
    );
    assert_eq!((p.health.check, p.retry.attempts), (HealthCheck::Tcp, 1));
}

#[test]
fn defaults_and_no_limits_do_not_warn() {
    let l = ok(&format!(
        "{BASE}balance = \"round_robin\"\nmax_conn = 0\n[pools.app.health]\ncheck = \"none\"\n"
    ));
    assert!(l.warnings.is_empty(), "{:#?}", l.warnings);
}

#[test]
fn header_settings_on_tcp_listeners_warn() {
    let l = ok("[listeners.pg]\nbind = \"127.0.0.1:1\"\nprotocol = \"tcp\"\npool = \"db\"\nheader_timeout = \"1s\"\n[pools.db]\n");
    assert_eq!(l.warnings.len(), 1);
    assert!(l.warnings[0]
        .message
        .contains("no effect on a tcp listener"));
}

/// With sni_routing, header_timeout bounds the wait for the ClientHello: no warning; the
/// other http-only settings still warn.
#[test]
fn header_timeout_on_an_sni_routing_listener_does_not_warn() {
    let l = ok("[listeners.edge]\nbind = \"127.0.0.1:1\"\nprotocol = \"tcp\"\nsni_routing = true\nheader_timeout = \"1s\"\n");
    assert!(l.warnings.is_empty(), "{:#?}", l.warnings);
    assert_eq!(
        l.config.listeners["edge"].header_timeout,
        std::time::Duration::from_secs(1)
    );
    let l = ok("[listeners.edge]\nbind = \"127.0.0.1:1\"\nprotocol = \"tcp\"\nsni_routing = true\nmax_header_bytes = 8192\n");
    assert_eq!(l.warnings.len(), 1, "{:#?}", l.warnings);
    assert!(l.warnings[0]
        .message
        .contains("max_header_bytes has no effect on a tcp listener"));
}

#[test]
fn summary_counts_resources() {
    let cfg = ok(&format!("{BASE}[routes.r]\nlistener = \"web\"\npool = \"app\"\n[pools.b]\nendpoints = [{{ addr = \"127.0.0.1:2\" }}, {{ addr = \"127.0.0.1:3\" }}]\n")).config;
    assert_eq!(summary(&cfg), "1 listener, 1 route, 2 pools, 3 endpoints");
    assert_eq!(
        summary(&Config::default()),
        "0 listeners, 0 routes, 0 pools, 0 endpoints"
    );
}

#[test]
fn parse_duration_is_public() {
    assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
    assert!(parse_duration("5").is_err());
}

#[test]
fn load_file_names_the_file_and_reports_read_errors() {
    let dir = std::env::temp_dir().join(format!("weir-config-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    std::fs::write(&path, "[globl]\n").unwrap();
    match load_file(&path) {
        Err(LoadError::Invalid(d)) => assert_eq!(d.list[0].file, path.display().to_string()),
        other => panic!("{other:?}"),
    }
    let missing = dir.join("nope.toml");
    let err = load_file(&missing).unwrap_err();
    assert!(matches!(err, LoadError::Read { .. }));
    assert!(err
        .to_string()
        .starts_with(&format!("{}: cannot read", missing.display())));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_non_loopback_admin_listener_needs_a_token() {
    let e = weir_config::parse_str("[admin]\nlisten = \"0.0.0.0:9901\"\n", "t.toml").unwrap_err();
    let d = e.errors().next().unwrap();
    assert_eq!((d.line, d.col), (2, 10));
    assert!(d.message.contains("token_file"), "{}", d.message);
    ok("[admin]\nlisten = \"0.0.0.0:9901\"\ntoken_file = \"/t\"\n");
}
