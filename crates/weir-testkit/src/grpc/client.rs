//! Clients of the Echo service (tonic's generated `EchoClient`), for tests that call a
//! backend directly or through weir. A deadline goes on the request:
//! `req.set_timeout(d)` sends `grpc-timeout`. tonic's `Channel` also enforces it
//! locally (the call fails with CANCELLED, "Timeout expired"); [`grpc_client_raw`]
//! does not, so a test sees the status the proxy itself sent when the deadline passed.

use std::time::Duration;

use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Error};

use super::echo::echo_client::EchoClient;
use tonic_health::pb::health_client::HealthClient;

/// `addr` or `http://addr` or `https://addr`: a bare address means h2c.
fn endpoint(target: impl ToString) -> Result<Endpoint, Error> {
    let t = target.to_string();
    let url = if t.contains("://") {
        t
    } else {
        format!("http://{t}")
    };
    Ok(Endpoint::from_shared(url)?.connect_timeout(Duration::from_secs(5)))
}

/// One HTTP/2 connection (h2c for `ADDR` or `http://ADDR`), connected now.
pub async fn grpc_client(target: impl ToString) -> Result<EchoClient<Channel>, Error> {
    Ok(EchoClient::new(endpoint(target)?.connect().await?))
}

/// hyper's HTTP/2 client (h2c with prior knowledge, connecting on the first call) under
/// the same `EchoClient`: it sends `grpc-timeout` but never cuts a call short itself.
pub type RawChannel = Client<HttpConnector, tonic::body::Body>;

/// `EchoClient` over [`RawChannel`] to `target` (`ADDR` or `http://ADDR`).
pub fn grpc_client_raw(target: impl ToString) -> Result<EchoClient<RawChannel>, Error> {
    let origin = endpoint(target)?.uri().clone();
    let client = Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build_http();
    Ok(EchoClient::with_origin(client, origin))
}

/// h2 over TLS to `target` (`https://` is implied), trusting only `ca_pem`, checking
/// the certificate against `server_name`.
pub async fn grpc_client_tls(
    target: impl ToString,
    ca_pem: &str,
    server_name: &str,
) -> Result<EchoClient<Channel>, Error> {
    Ok(EchoClient::new(
        tls_channel(target, ca_pem, server_name).await?,
    ))
}

/// The standard health client on an h2c connection.
pub async fn health_client(target: impl ToString) -> Result<HealthClient<Channel>, Error> {
    Ok(HealthClient::new(endpoint(target)?.connect().await?))
}

async fn tls_channel(
    target: impl ToString,
    ca_pem: &str,
    server_name: &str,
) -> Result<Channel, Error> {
    let t = target.to_string();
    let url = if t.contains("://") {
        t
    } else {
        format!("https://{t}")
    };
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(ca_pem))
        .domain_name(server_name);
    endpoint(url)?.tls_config(tls)?.connect().await
}
