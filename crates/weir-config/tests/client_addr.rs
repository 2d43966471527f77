//! The client's real address: a listener's `trusted_proxies` and `proxy_protocol`, a pool's
//! `send_proxy`. The values they give, and each mistake at its line and column.

mod common;
use common::*;

use weir_config::*;

const GOOD: &str = r#"[listeners.web]
bind = "127.0.0.1:8080"
trusted_proxies = ["10.0.0.0/8", "::1/128", "127.0.0.1", "2001:db8::/32"]
proxy_protocol = true

[listeners.db]
protocol = "tcp"
bind = "127.0.0.1:8081"
pool = "pg"
trusted_proxies = ["192.168.0.0/16"]
proxy_protocol = true
header_timeout = "2s"

[pools.app]
endpoints = [{ addr = "127.0.0.1:9001" }]
send_proxy = "v2"

[pools.pg]
endpoints = [{ addr = "127.0.0.1:9002" }]
send_proxy = "v1"

[pools.grpc]
endpoints = [{ addr = "127.0.0.1:9003" }]
protocol = "h2c"
send_proxy = "v2"
"#;

#[test]
fn the_keys_read_into_the_model() {
    let l = ok(GOOD);
    assert!(l.warnings.is_empty(), "{:#?}", l.warnings);
    let web = &l.config.listeners["web"];
    assert!(web.proxy_protocol);
    let nets: Vec<String> = web.trusted_proxies.iter().map(|c| c.to_string()).collect();
    assert_eq!(
        nets,
        ["10.0.0.0/8", "::1/128", "127.0.0.1/32", "2001:db8::/32"]
    );
    assert!(web.trusted_proxies[0].contains("10.1.2.3".parse().unwrap()));
    assert!(l.config.listeners["db"].proxy_protocol);
    assert_eq!(l.config.pools["app"].send_proxy, Some(SendProxy::V2));
    assert_eq!(l.config.pools["pg"].send_proxy, Some(SendProxy::V1));
    // On an HTTP/2 pool too: each client's connection is its own.
    assert_eq!(l.config.pools["grpc"].send_proxy, Some(SendProxy::V2));
}

#[test]
fn defaults_are_off() {
    let l = ok(BASE);
    let web = &l.config.listeners["web"];
    assert!(web.trusted_proxies.is_empty() && !web.proxy_protocol);
    assert_eq!(l.config.pools["app"].send_proxy, None);
}

#[test]
fn a_bad_block_is_an_error_at_its_element() {
    let src = BASE.replace(
        "bind = \"127.0.0.1:8080\"\n",
        "bind = \"127.0.0.1:8080\"\ntrusted_proxies = [\"10.0.0.0/8\", \"10.0.0.1/8\"]\n",
    );
    one_error(&src, 3, 34, "write \"10.0.0.0/8\"");
    let src = BASE.replace(
        "bind = \"127.0.0.1:8080\"\n",
        "bind = \"127.0.0.1:8080\"\ntrusted_proxies = [\"::1/129\"]\n",
    );
    one_error(&src, 3, 20, "from 0 to 128");
    let src = BASE.replace(
        "bind = \"127.0.0.1:8080\"\n",
        "bind = \"127.0.0.1:8080\"\ntrusted_proxies = [\"lb.internal\"]\n",
    );
    one_error(&src, 3, 20, "not an IP address or CIDR block");
    let src = BASE.replace(
        "bind = \"127.0.0.1:8080\"\n",
        "bind = \"127.0.0.1:8080\"\ntrusted_proxies = [10]\n",
    );
    one_error(&src, 3, 20, "expected a string");
    let src = BASE.replace(
        "bind = \"127.0.0.1:8080\"\n",
        "bind = \"127.0.0.1:8080\"\ntrusted_proxies = \"10.0.0.0/8\"\n",
    );
    one_error(&src, 3, 19, "expected an array");
    let src = BASE.replace(
        "bind = \"127.0.0.1:8080\"\n",
        "bind = \"127.0.0.1:8080\"\ntrusted_proxies = []\n",
    );
    one_error(&src, 3, 19, "trusted_proxies is empty");
}

#[test]
fn proxy_protocol_needs_trusted_proxies() {
    let src = BASE.replace(
        "bind = \"127.0.0.1:8080\"\n",
        "bind = \"127.0.0.1:8080\"\nproxy_protocol = true\n",
    );
    one_error(&src, 3, 18, "proxy_protocol needs trusted_proxies");
    let src = BASE.replace(
        "bind = \"127.0.0.1:8080\"\n",
        "bind = \"127.0.0.1:8080\"\nproxy_protocol = \"yes\"\n",
    );
    one_error(&src, 3, 18, "expected a boolean");
    // Off needs nothing.
    ok(&BASE.replace(
        "bind = \"127.0.0.1:8080\"\n",
        "bind = \"127.0.0.1:8080\"\nproxy_protocol = false\n",
    ));
}

#[test]
fn send_proxy_takes_v1_or_v2() {
    let src = format!("{BASE}send_proxy = \"v3\"\n");
    one_error(&src, 6, 14, "invalid send_proxy \"v3\"");
    let src = format!("{BASE}send_proxy = true\n");
    one_error(&src, 6, 14, "expected a string");
}

#[test]
fn keys_that_do_nothing_on_a_tcp_listener_warn() {
    let src = r#"[listeners.db]
protocol = "tcp"
bind = "127.0.0.1:8081"
pool = "pg"
trusted_proxies = ["10.0.0.0/8"]
header_timeout = "2s"

[pools.pg]
endpoints = [{ addr = "127.0.0.1:9002" }]
"#;
    let w: Vec<(usize, usize, String)> = ok(src)
        .warnings
        .into_iter()
        .map(|d| (d.line, d.col, d.message))
        .collect();
    assert_eq!(w.len(), 2, "{w:#?}");
    assert_eq!((w[0].0, w[0].1), (5, 1));
    assert!(w[0].2.contains("without proxy_protocol"), "{w:#?}");
    assert_eq!((w[1].0, w[1].1), (6, 1));
}
