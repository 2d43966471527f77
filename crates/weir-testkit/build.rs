//! With the `grpc` feature: generates the `weir.test.Echo` service (server trait and
//! client) from Rust with tonic-build's `manual` module, so no protoc and no .proto file
//! are needed. The messages are plain prost structs in src/grpc/messages.rs;
//! bench/grpc/echo.proto describes the same service for ghz.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "grpc")]
    echo();
}

#[cfg(feature = "grpc")]
fn echo() {
    use tonic_build::manual::{Builder, Method, Service};
    let method = |name: &str, route: &str| {
        Method::builder()
            .name(name)
            .route_name(route)
            .input_type("crate::grpc::messages::EchoRequest")
            .output_type("crate::grpc::messages::EchoReply")
            .codec_path("tonic_prost::ProstCodec")
    };
    let echo = Service::builder()
        .name("Echo")
        .package("weir.test")
        .method(method("unary", "Unary").build())
        .method(
            method("server_stream", "ServerStream")
                .server_streaming()
                .build(),
        )
        .method(
            method("client_stream", "ClientStream")
                .client_streaming()
                .build(),
        )
        .method(
            method("bidi", "Bidi")
                .client_streaming()
                .server_streaming()
                .build(),
        )
        .build();
    Builder::new().compile(&[echo]);
}
