//! The gRPC backend over TLS (h2 by ALPN), with certificates from `certs`.
#![cfg(feature = "grpc")]

use weir_testkit::certs::Ca;
use weir_testkit::grpc::{grpc_client_tls, EchoRequest, GrpcUpstream};

#[tokio::test]
async fn unary_over_tls() {
    let dir = std::env::temp_dir().join(format!("weir-grpc-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca = Ca::new("test CA");
    let (cert, key) = ca.leaf_files(&dir, "backend", &["backend.test", "127.0.0.1"]);
    let up = GrpcUpstream::spawn_tls("t", cert, key).await.unwrap();
    assert!(up.url().starts_with("https://"));
    let mut c = grpc_client_tls(up.addr(), &ca.pem, "backend.test")
        .await
        .unwrap();
    let r = c
        .unary(EchoRequest {
            message: "over tls".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((r.message.as_str(), r.server.as_str()), ("over tls", "t"));
    // A client that does not trust the CA gets nowhere.
    let other = Ca::new("other CA");
    assert!(grpc_client_tls(up.addr(), &other.pem, "backend.test")
        .await
        .is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}
