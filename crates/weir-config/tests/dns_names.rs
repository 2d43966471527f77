//! Endpoints given by DNS name: `addr = "HOST:PORT"` and `srv = "..."` in the file and as API
//! resources, the `[global]` resolver settings, and the mistakes each can have.

mod common;

use std::time::Duration;

use common::{ok, one_error};
use serde_json::json;
use weir_config::{DnsName, NamedEndpoint, ResourceChange, ResourceKind, Resources};

#[test]
fn names_and_addresses_share_a_pools_endpoints() {
    let c = ok(r#"
[global]
resolvers = ["127.0.0.1:5353", "10.0.0.53"]
dns_min_ttl = "2s"
dns_max_ttl = "1m"
[pools.app]
endpoints = [
  { addr = "127.0.0.1:9001" },
  { addr = "api.internal:8080", weight = 5 },
  { srv = "_http._tcp.api.internal" },
]
"#)
    .config;
    let p = &c.pools["app"];
    assert_eq!(p.endpoints.len(), 1);
    assert_eq!(
        p.named,
        vec![
            NamedEndpoint {
                name: DnsName::Host {
                    host: "api.internal".into(),
                    port: 8080
                },
                weight: 5
            },
            NamedEndpoint {
                name: DnsName::Srv("_http._tcp.api.internal".into()),
                weight: 1
            },
        ]
    );
    assert_eq!(
        c.global.resolvers,
        vec![
            "127.0.0.1:5353".parse().unwrap(),
            "10.0.0.53:53".parse().unwrap()
        ]
    );
    assert_eq!(c.global.dns_min_ttl, Duration::from_secs(2));
    assert_eq!(c.global.dns_max_ttl, Duration::from_secs(60));
    assert_eq!(
        weir_config::summary(&c),
        "0 listeners, 0 routes, 1 pool, 1 endpoint, 2 endpoint names"
    );
}

#[test]
fn each_mistake_is_an_error_at_its_place() {
    one_error(
        "[pools.app]\nendpoints = [{ addr = \"a.internal:80\" }, { addr = \"a.internal:80\" }]\n",
        2,
        51,
        "duplicate endpoint a.internal:80",
    );
    one_error(
        "[pools.app]\nendpoints = [{ addr = \"a.internal:80\", srv = \"_h._tcp.a\" }]\n",
        2,
        46,
        "not both",
    );
    one_error(
        "[pools.app]\nendpoints = [{ srv = \"_h._tcp.a\", weight = 2 }]\n",
        2,
        44,
        "remove `weight`",
    );
    one_error(
        "[global]\nresolvers = [\"dns.internal\"]\n",
        2,
        14,
        "invalid address",
    );
    one_error("[global]\ndns_min_ttl = \"0s\"\n", 2, 15, "greater than 0");
    one_error(
        "[global]\ndns_min_ttl = \"1m\"\ndns_max_ttl = \"10s\"\n",
        2,
        15,
        "above dns_max_ttl",
    );
}

#[test]
fn names_are_api_resources_too() {
    let mut r = Resources::new(Default::default(), Default::default());
    let put = |kind, name, spec| ResourceChange {
        kind,
        name,
        spec: Some(spec),
    };
    let pool = json!({});
    let ep = json!({"weight": 3});
    let srv = json!({});
    r.apply(&[
        put(ResourceKind::Pool, "app", &pool),
        put(ResourceKind::Endpoint, "app/api.internal:8080", &ep),
        put(ResourceKind::Endpoint, "app/_http._tcp.api.internal", &srv),
    ])
    .unwrap();
    let p = &r.config().pools["app"];
    assert!(p.endpoints.is_empty());
    assert_eq!(p.named.len(), 2);
    assert_eq!(p.named[1].weight, 3);
    let bad = json!({});
    let err = r
        .apply(&[put(ResourceKind::Endpoint, "app/api..internal:80", &bad)])
        .unwrap_err();
    assert!(err[0].message.contains("empty label"), "{err:?}");
    assert_eq!(r.config().pools["app"].named.len(), 2);
}
