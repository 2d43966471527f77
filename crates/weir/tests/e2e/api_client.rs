//! Calling the admin API from tests.

#![allow(dead_code)]

use std::net::SocketAddr;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use serde_json::Value;
use weir_testkit::client::{self, Resp};

/// `METHOD /api/v1/PATH` with headers and an optional JSON body (sent as
/// `Content-Type: application/json`, as the API requires).
pub async fn call(
    admin: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> Resp {
    let mut b = Request::builder()
        .method(method)
        .uri(format!("/api/v1/{path}"));
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    if body.is_some() {
        b = b.header("content-type", "application/json");
    }
    let body = body.map_or(Bytes::new(), |v| Bytes::from(v.to_string()));
    client::send(admin, b.body(Full::new(body)).unwrap())
        .await
        .unwrap_or_else(|e| panic!("{method} /api/v1/{path}: {e}"))
}

pub async fn get(admin: SocketAddr, path: &str) -> Resp {
    call(admin, "GET", path, &[], None).await
}

/// Adds a resource (`If-None-Match: *`) and asserts 201; returns its version.
pub async fn add(admin: SocketAddr, path: &str, spec: Value) -> u64 {
    let r = call(admin, "PUT", path, &[("if-none-match", "*")], Some(spec)).await;
    assert_eq!(r.status, 201, "PUT {path}: {}", r.text());
    version(&r)
}

/// Updates version `v` of a resource and asserts 200; returns the new version.
pub async fn update(admin: SocketAddr, path: &str, v: u64, spec: Value) -> u64 {
    let tag = format!("\"{v}\"");
    let r = call(admin, "PUT", path, &[("if-match", &tag)], Some(spec)).await;
    assert_eq!(r.status, 200, "PUT {path}: {}", r.text());
    version(&r)
}

pub fn version(r: &Resp) -> u64 {
    r.header("etag")
        .expect("an ETag")
        .trim_matches('"')
        .parse()
        .unwrap()
}

pub fn json(r: &Resp) -> Value {
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("{e}: {}", r.text()))
}

/// A listener on `listen` in front of pool `app` with these endpoints (weight 1).
pub async fn http_setup(admin: SocketAddr, listen: SocketAddr, eps: &[SocketAddr]) {
    add(admin, "pools/app", serde_json::json!({})).await;
    for e in eps {
        add(
            admin,
            &format!("pools/app/endpoints/{e}"),
            serde_json::json!({"weight": 1}),
        )
        .await;
    }
    add(
        admin,
        "listeners/web",
        serde_json::json!({"bind": listen.to_string(), "pool": "app"}),
    )
    .await;
}
