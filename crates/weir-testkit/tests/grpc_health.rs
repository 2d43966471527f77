//! The gRPC backend's standard health service, set at run time.
#![cfg(feature = "grpc")]

use futures_util::StreamExt;
use weir_testkit::grpc::tonic::Code;
use weir_testkit::grpc::{health_client, GrpcUpstream, HealthCheckRequest, ServingStatus};

fn ask(service: &str) -> HealthCheckRequest {
    HealthCheckRequest {
        service: service.into(),
    }
}

#[tokio::test]
async fn check_reflects_set_serving() {
    let up = GrpcUpstream::spawn("a").await.unwrap();
    let mut h = health_client(up.addr()).await.unwrap();
    for service in ["", "weir.test.Echo"] {
        let r = h.check(ask(service)).await.unwrap().into_inner();
        assert_eq!(r.status(), ServingStatus::Serving, "{service:?}");
    }
    assert_eq!(
        h.check(ask("nope")).await.unwrap_err().code(),
        Code::NotFound
    );

    up.set_serving("", false).await;
    let r = h.check(ask("")).await.unwrap().into_inner();
    assert_eq!(r.status(), ServingStatus::NotServing);
    up.set_serving("", true).await;
    up.set_serving("other", false).await;
    assert_eq!(
        h.check(ask("")).await.unwrap().into_inner().status(),
        ServingStatus::Serving
    );
    assert_eq!(
        h.check(ask("other")).await.unwrap().into_inner().status(),
        ServingStatus::NotServing
    );
    // Health checks are counted apart from calls.
    assert_eq!((up.health_checks(), up.calls()), (6, 0));
}

#[tokio::test]
async fn watch_sees_a_change() {
    let up = GrpcUpstream::spawn("a").await.unwrap();
    let mut h = health_client(up.addr()).await.unwrap();
    let mut w = h.watch(ask("weir.test.Echo")).await.unwrap().into_inner();
    let first = w.next().await.unwrap().unwrap();
    assert_eq!(first.status(), ServingStatus::Serving);
    up.set_serving("weir.test.Echo", false).await;
    let next = w.next().await.unwrap().unwrap();
    assert_eq!(next.status(), ServingStatus::NotServing);
}
