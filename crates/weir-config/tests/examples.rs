//! The documented configs parse: DESIGN.md §2's example and examples/*.toml.

use weir_config::{parse_str, Balance, HealthCheck, Protocol};

/// Verbatim from DESIGN.md §2.
const DESIGN_EXAMPLE: &str = r#"[admin]
listen = "127.0.0.1:9901"          # admin API, metrics, dashboard
# token_file = "/etc/weir/token"   # required when listen is not loopback

[listeners.web]
bind = "0.0.0.0:8080"
protocol = "http"                  # "http" | "tcp"  (later "https")
pool = "app"                       # default pool when no route matches (optional for http)

[listeners.pg]
bind = "0.0.0.0:5433"
protocol = "tcp"
pool = "pg"                        # tcp listeners always name a pool

[routes.shop]
listener = "web"
host = "lb.foo.com"                # exact, or "*.foo.com"; omitted = any host
path_prefix = "/"                  # longest prefix wins; omitted = "/"
pool = "app"

[pools.app]
balance = "round_robin"            # round_robin | least_conn | random | p2c | ewma | hash | sticky
endpoints = [
  { addr = "127.0.0.1:9001", weight = 10 },
  { addr = "127.0.0.1:9002", weight = 10 },
]
max_conn = 4                       # per endpoint: requests (http) or sessions (tcp) in flight; 0 = no limit
max_queue = 100                    # requests waiting for a slot, per pool; beyond it: overflow
queue_timeout = "5s"
overflow_status = 429              # 429 or 503; sent with Retry-After

[pools.app.health]
check = "http"                     # "tcp" | "http" | "none"
path = "/healthz"
expect_status = "200-399"
interval = "1s"
timeout = "500ms"
rise = 2
fall = 2

[pools.app.retry]
attempts = 2                       # retries after the first try
"#;

#[test]
fn design_example_needs_only_one_more_pool() {
    // As written, §2 names a pool `pg` it never defines: that is an error.
    let err = parse_str(DESIGN_EXAMPLE, "design.toml").unwrap_err();
    let errors: Vec<_> = err.errors().collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert_eq!((errors[0].line, errors[0].col), (13, 8));
    assert!(errors[0].message.starts_with("no pool named `pg`"), "{err}");

    let src =
        format!("{DESIGN_EXAMPLE}\n[pools.pg]\nendpoints = [{{ addr = \"127.0.0.1:5432\" }}]\n");
    let loaded = parse_str(&src, "design.toml").unwrap_or_else(|e| panic!("{e}"));
    let cfg = &loaded.config;
    assert_eq!(cfg.listeners["pg"].protocol, Protocol::Tcp);
    assert_eq!(cfg.pools["app"].endpoints.len(), 2);
    assert_eq!(cfg.pools["app"].balance, Balance::RoundRobin);
    assert_eq!(cfg.pools["app"].health.check, HealthCheck::Http);
    // Everything in the design's example is enforced now.
    assert!(loaded.warnings.is_empty(), "{:#?}", loaded.warnings);
}

#[test]
fn every_example_parses_without_errors() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).expect("examples/ exists") {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        // The files an example names (https.toml's certificates) are made and read by the
        // e2e test `check::shipped_examples_are_valid`; here, the config itself.
        let text = std::fs::read_to_string(&path).unwrap();
        let loaded = weir_config::parse_str(&text, &path.display().to_string())
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            loaded.warnings.is_empty(),
            "{}: {:#?}",
            path.display(),
            loaded.warnings
        );
        seen += 1;
    }
    assert!(
        seen >= 3,
        "expected at least basic, host-routing and tcp examples"
    );
}

#[test]
fn host_routing_example_routes_two_domains() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/host-routing.toml"
    );
    let cfg = weir_config::load_file(path.as_ref()).unwrap().config;
    assert_eq!(cfg.listeners["web"].bind.to_string(), "127.0.0.1:8080");
    let hosts: Vec<_> = cfg
        .routes
        .values()
        .map(|r| (r.host.clone().unwrap(), r.pool.clone()))
        .collect();
    assert_eq!(hosts.len(), 2);
    assert_ne!(hosts[0].1, hosts[1].1);
}
