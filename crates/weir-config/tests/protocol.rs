//! A pool's upstream protocol (`protocol`, `max_streams_per_conn`), the grpc health check
//! (`check = "grpc"`, `service`) and `retry.on_grpc_status`: values, the rules between
//! them, and the warnings for keys that would do nothing. `BASE` has five lines; pool
//! keys go from line 6.

mod common;
use common::*;

use weir_config::*;

fn with(lines: &[&str]) -> String {
    let mut s = BASE.to_string();
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}

fn warnings(src: &str) -> Vec<(usize, usize, String)> {
    ok(src)
        .warnings
        .into_iter()
        .map(|d| (d.line, d.col, d.message))
        .collect()
}

#[test]
fn protocols_and_streams_per_connection() {
    for (v, want) in [
        ("http1", UpstreamProtocol::Http1),
        ("h2c", UpstreamProtocol::H2c),
    ] {
        let src = with(&[&format!("protocol = \"{v}\""), "max_streams_per_conn = 7"]);
        let l = ok(&src);
        let p = &l.config.pools["app"];
        assert_eq!((p.protocol, p.max_streams_per_conn), (want, 7));
    }
    let tls = with(&[
        "protocol = \"h2\"",
        "[pools.app.tls]",
        "server_name = \"a.internal\"",
    ]);
    assert_eq!(ok(&tls).config.pools["app"].protocol, UpstreamProtocol::H2);
    // An h2 pool's alpn list must offer h2.
    let w = warnings(&with(&[
        "protocol = \"h2\"",
        "[pools.app.tls]",
        "alpn = [\"http/1.1\"]",
    ]));
    assert_eq!(w.len(), 1, "{w:#?}");
    assert_eq!((w[0].0, w[0].1), (8, 8));
    assert!(w[0].2.contains("does not offer \"h2\""), "{w:#?}");
    let w = warnings(&with(&[
        "protocol = \"h2\"",
        "[pools.app.tls]",
        "alpn = [\"h2\", \"http/1.1\"]",
    ]));
    assert!(w.is_empty(), "{w:#?}");
    one_error(
        &with(&["protocol = \"http2\""]),
        6,
        12,
        "invalid protocol \"http2\"",
    );
    one_error(
        &with(&["max_streams_per_conn = 0"]),
        6,
        24,
        "max_streams_per_conn",
    );
}

#[test]
fn h2_needs_tls_and_h2c_refuses_it() {
    one_error(
        &with(&["protocol = \"h2\""]),
        6,
        12,
        "protocol = \"h2\" is HTTP/2 over TLS: add [pools.app.tls]",
    );
    one_error(
        &with(&[
            "protocol = \"h2c\"",
            "[pools.app.tls]",
            "server_name = \"a.internal\"",
        ]),
        6,
        12,
        "protocol = \"h2c\" is cleartext HTTP/2",
    );
}

#[test]
fn a_grpc_check_needs_http2_and_reads_its_service() {
    one_error(
        &with(&["[pools.app.health]", "check = \"grpc\""]),
        7,
        9,
        "check = \"grpc\" speaks HTTP/2",
    );
    let src = with(&[
        "protocol = \"h2c\"",
        "[pools.app.health]",
        "check = \"grpc\"",
        "service = \"shop.Orders\"",
        "host = \"orders.internal\"",
    ]);
    let l = ok(&src);
    assert!(l.warnings.is_empty(), "{:#?}", l.warnings);
    let h = &l.config.pools["app"].health;
    assert_eq!(
        (h.check, h.service.as_str()),
        (HealthCheck::Grpc, "shop.Orders")
    );
    one_error(
        &with(&[
            "protocol = \"h2c\"",
            "[pools.app.health]",
            "check = \"grpc\"",
            "service = \"a b\"",
        ]),
        9,
        11,
        "invalid service",
    );
}

#[test]
fn keys_that_would_do_nothing_warn() {
    // Streams per connection on HTTP/1.1; a service without a grpc check; an http-only
    // key with a grpc check.
    let w = warnings(&with(&[
        "max_streams_per_conn = 10",
        "[pools.app.health]",
        "check = \"http\"",
        "service = \"x\"",
    ]));
    assert_eq!(w.len(), 2, "{w:#?}");
    assert_eq!((w[0].0, w[0].1), (6, 1));
    assert!(
        w[0].2.contains("max_streams_per_conn has no effect"),
        "{w:#?}"
    );
    assert_eq!((w[1].0, w[1].1), (9, 1));
    assert!(
        w[1].2
            .contains("service has no effect unless check = \"grpc\""),
        "{w:#?}"
    );
    let w = warnings(&with(&[
        "protocol = \"h2c\"",
        "[pools.app.health]",
        "check = \"grpc\"",
        "path = \"/x\"",
    ]));
    assert_eq!(w.len(), 1, "{w:#?}");
    assert!(w[0]
        .2
        .contains("path has no effect unless check = \"http\""));
    // A tcp listener relays bytes whatever the pool's protocol.
    let src = "[listeners.db]\nbind = \"127.0.0.1:5432\"\nprotocol = \"tcp\"\npool = \"app\"\n\
               [pools.app]\nprotocol = \"h2c\"\nendpoints = [{ addr = \"127.0.0.1:9001\" }]\n";
    let w = warnings(src);
    assert_eq!(w.len(), 1, "{w:#?}");
    assert_eq!((w[0].0, w[0].1), (4, 8));
    assert!(w[0].2.contains("a tcp listener does not use"), "{w:#?}");
}

#[test]
fn on_grpc_status_lists_distinct_grpc_error_codes() {
    let src = with(&["[pools.app.retry]", "on_grpc_status = [14, 4]"]);
    assert_eq!(ok(&src).config.pools["app"].retry.on_grpc_status, [14, 4]);
    one_error(
        &with(&["[pools.app.retry]", "on_grpc_status = [14, 17]"]),
        7,
        23,
        "on_grpc_status may only list gRPC error codes (1-16), found 17",
    );
    one_error(
        &with(&["[pools.app.retry]", "on_grpc_status = [14, 14]"]),
        7,
        23,
        "14 is listed twice in on_grpc_status",
    );
    one_error(
        &with(&["[pools.app.retry]", "on_grpc_status = 14"]),
        7,
        18,
        "on_grpc_status must be an array of gRPC status codes like [14] (UNAVAILABLE), found an integer; write [14]",
    );
}
