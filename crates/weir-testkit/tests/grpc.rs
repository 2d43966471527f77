//! The gRPC Echo backend called directly: each method, statuses, trailers, padding,
//! grpc-timeout, the call counter and log, stop/start.
#![cfg(feature = "grpc")]

use std::time::{Duration, Instant};

use prost::Message;
use weir_testkit::grpc::tonic::{Code, Request};
use weir_testkit::grpc::{grpc_client, grpc_client_raw, EchoRequest, GrpcUpstream};

fn req(message: &str) -> EchoRequest {
    EchoRequest {
        message: message.into(),
        ..Default::default()
    }
}

#[tokio::test]
async fn unary_echoes_and_says_who_answered() {
    let up = GrpcUpstream::spawn("a").await.unwrap();
    let mut c = grpc_client(up.addr()).await.unwrap();
    let r = c.unary(req("hi")).await.unwrap().into_inner();
    assert_eq!(r.message, "hi");
    assert_eq!(r.server, "a");
    assert_eq!(r.authority, up.addr().to_string());
    assert_eq!(r.grpc_timeout, "");
    assert_eq!(up.calls(), 1);
    assert_eq!(
        up.calls_counter()
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    let log = up.log();
    assert_eq!(log[0].path, "/weir.test.Echo/Unary");
    assert_eq!(log[0].headers["content-type"], "application/grpc");
}

#[tokio::test]
async fn grpc_timeout_is_echoed() {
    let up = GrpcUpstream::spawn("a").await.unwrap();
    let mut c = grpc_client(up.url()).await.unwrap();
    let mut r = Request::new(req("hi"));
    r.set_timeout(Duration::from_secs(2));
    let reply = c.unary(r).await.unwrap().into_inner();
    assert_eq!(reply.grpc_timeout, "2000000u");
}

#[tokio::test]
async fn delay_and_client_deadline() {
    let up = GrpcUpstream::spawn("a").await.unwrap();
    let mut c = grpc_client(up.addr()).await.unwrap();
    let t = Instant::now();
    let slow = EchoRequest {
        delay_ms: 150,
        ..req("slow")
    };
    c.unary(slow.clone()).await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(150));
    let mut r = Request::new(slow);
    r.set_timeout(Duration::from_millis(30));
    let err = c.unary(r).await.unwrap_err();
    assert_eq!(err.code(), Code::Cancelled, "tonic's own deadline: {err:?}");
    assert_eq!(
        up.calls(),
        2,
        "the call reached the backend before timing out"
    );

    // The raw client sends the deadline but waits for whatever the other side says
    // (this backend does not enforce it).
    let mut raw = grpc_client_raw(up.addr()).unwrap();
    let mut r = Request::new(EchoRequest {
        delay_ms: 100,
        ..req("slow")
    });
    r.set_timeout(Duration::from_millis(30));
    let reply = raw.unary(r).await.unwrap().into_inner();
    assert_eq!(
        (reply.message.as_str(), reply.grpc_timeout.as_str()),
        ("slow", "30000000n")
    );
}

#[tokio::test]
async fn status_code_and_trailer_on_error() {
    let up = GrpcUpstream::spawn("a").await.unwrap();
    let mut c = grpc_client(up.addr()).await.unwrap();
    let err = c
        .unary(EchoRequest {
            status_code: Code::Unavailable as i32,
            set_trailer: "t1".into(),
            ..req("x")
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable);
    assert_eq!(err.message(), "asked");
    assert_eq!(err.metadata().get("x-echo-trailer").unwrap(), "t1");
    assert_eq!(up.calls(), 1);
}

#[tokio::test]
async fn trailer_on_success() {
    let up = GrpcUpstream::spawn("a").await.unwrap();
    let mut c = grpc_client(up.addr()).await.unwrap();
    // Unary: tonic merges the trailers into the response metadata.
    let r = c
        .unary(EchoRequest {
            set_trailer: "u".into(),
            ..req("x")
        })
        .await
        .unwrap();
    assert_eq!(r.metadata().get("x-echo-trailer").unwrap(), "u");
    // A stream's trailers are read on their own: proof it is a trailer, not a header.
    let mut s = c
        .server_stream(EchoRequest {
            set_trailer: "s".into(),
            count: 1,
            ..req("x")
        })
        .await
        .unwrap();
    assert!(s.metadata().get("x-echo-trailer").is_none());
    let s = s.get_mut();
    while s.message().await.unwrap().is_some() {}
    let trailers = s.trailers().await.unwrap().unwrap();
    assert_eq!(trailers.get("x-echo-trailer").unwrap(), "s");
}

#[tokio::test]
async fn reply_bytes_pads_the_reply() {
    let up = GrpcUpstream::spawn("a").await.unwrap();
    let mut c = grpc_client(up.addr()).await.unwrap();
    for size in [100u64, 1000, 70_000] {
        let r = c
            .unary(EchoRequest {
                reply_bytes: size,
                ..req("x")
            })
            .await
            .unwrap()
            .into_inner();
        let len = r.encoded_len() as u64;
        assert!(len == size || len + 1 == size, "{size}: {len}");
    }
}

#[tokio::test]
async fn server_stream_sends_count_replies_then_the_status() {
    let up = GrpcUpstream::spawn("a").await.unwrap();
    let mut c = grpc_client(up.addr()).await.unwrap();
    let mut s = c
        .server_stream(EchoRequest {
            count: 3,
            ..req("m")
        })
        .await
        .unwrap()
        .into_inner();
    let mut got = Vec::new();
    while let Some(r) = s.message().await.unwrap() {
        got.push((r.message, r.count));
    }
    let want: Vec<_> = (0..3).map(|i| (format!("m {i}"), i)).collect();
    assert_eq!(got, want);

    // The asked status comes after the data, in the trailers.
    let mut s = c
        .server_stream(EchoRequest {
            count: 2,
            status_code: Code::Aborted as i32,
            ..req("m")
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(s.message().await.unwrap().unwrap().message, "m 0");
    assert_eq!(s.message().await.unwrap().unwrap().message, "m 1");
    assert_eq!(s.message().await.unwrap_err().code(), Code::Aborted);
}

#[tokio::test]
async fn client_stream_joins_the_messages() {
    let up = GrpcUpstream::spawn("a").await.unwrap();
    let mut c = grpc_client(up.addr()).await.unwrap();
    let input = futures_util::stream::iter(["a", "b", "c"].map(req));
    let r = c.client_stream(input).await.unwrap().into_inner();
    assert_eq!((r.message.as_str(), r.count), ("a,b,c", 3));

    let failing = futures_util::stream::iter([
        req("a"),
        EchoRequest {
            status_code: Code::InvalidArgument as i32,
            ..req("b")
        },
    ]);
    let err = c.client_stream(failing).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
}

#[tokio::test]
async fn bidi_echoes_each_request_as_it_arrives() {
    let up = GrpcUpstream::spawn("a").await.unwrap();
    let mut c = grpc_client(up.addr()).await.unwrap();
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    let input =
        futures_util::stream::unfold(rx, |mut rx| async { rx.recv().await.map(|m| (m, rx)) });
    // The response head comes before any request is sent.
    let mut out = c.bidi(input).await.unwrap().into_inner();
    for i in 0..3u64 {
        tx.send(req(&format!("n{i}"))).await.unwrap();
        let r = out.message().await.unwrap().unwrap();
        assert_eq!((r.message, r.count), (format!("n{i}"), i));
    }
    tx.send(EchoRequest {
        status_code: Code::NotFound as i32,
        ..req("x")
    })
    .await
    .unwrap();
    assert_eq!(out.message().await.unwrap_err().code(), Code::NotFound);
}

#[tokio::test]
async fn calls_share_one_connection_and_stop_start() {
    let up = GrpcUpstream::spawn("a").await.unwrap();
    let mut c = grpc_client(up.addr()).await.unwrap();
    c.unary(req("1")).await.unwrap();
    c.unary(req("2")).await.unwrap();
    let ids: Vec<_> = up.log().iter().map(|r| r.conn_id).collect();
    assert_eq!(ids, [0, 0]);
    assert_eq!((up.connections(), up.open_connections()), (1, 1));

    up.stop().await;
    assert!(c.unary(req("3")).await.is_err());
    assert!(grpc_client(up.addr()).await.is_err());
    up.start().unwrap();
    let mut c = grpc_client(up.addr()).await.unwrap();
    assert_eq!(c.unary(req("4")).await.unwrap().into_inner().message, "4");
    assert_eq!(up.calls(), 3);
}
