//! The documented configs parse: docs/DESIGN.md §2's example and examples/*.toml.

use weir_config::{parse_str, Balance, HealthCheck, Protocol};

/// The TOML block of docs/DESIGN.md §2, read from the document itself, so that the example
/// a reader copies is the one tested.
fn design_example() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/DESIGN.md");
    let doc = std::fs::read_to_string(path).expect("docs/DESIGN.md exists");
    let section = doc.split("\n## 2.").nth(1).expect("DESIGN.md has a §2");
    let block = section
        .split("```toml\n")
        .nth(1)
        .expect("DESIGN.md §2 has a ```toml block");
    let toml = block.split("\n```").next().unwrap();
    format!("{toml}\n")
}

#[test]
fn design_example_is_complete_and_valid() {
    let loaded =
        parse_str(&design_example(), "docs/DESIGN.md §2").unwrap_or_else(|e| panic!("{e}"));
    let cfg = &loaded.config;
    assert_eq!(cfg.listeners["web"].protocol, Protocol::Http);
    assert_eq!(cfg.listeners["pg"].protocol, Protocol::Tcp);
    assert_eq!(cfg.pools["app"].endpoints.len(), 2);
    assert_eq!(cfg.pools["app"].balance, Balance::RoundRobin);
    assert_eq!(cfg.pools["app"].health.check, HealthCheck::Http);
    assert_eq!(cfg.pools["pg"].endpoints.len(), 1);
    // Every key the example shows takes effect: no warning about one that does not.
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
