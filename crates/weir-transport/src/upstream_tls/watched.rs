//! A pool's TLS as weir runs it: its files stamped, read (`connectors.rs`) into the
//! settings (`handshake.rs`), then watched for change (`reload.rs`). The one place that
//! knows all three, so the settings do not call their reload and the reload only sees
//! the settings.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use arc_swap::ArcSwap;
use rustls::pki_types::ServerName;
use weir_config::PoolTls;

use super::connectors::{BuildError, Connectors};
use super::handshake::UpstreamTls;
use super::reload;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl UpstreamTls {
    /// Reads the files `settings` (of pool `pool`) names and builds the client config, then
    /// watches the files for as long as the result is in use.
    pub fn build(pool: &str, settings: &PoolTls) -> Result<Arc<UpstreamTls>, BuildError> {
        // Stamped first: a change made while they are read is seen by the watch.
        let seen = reload::stamps(settings);
        let connectors = Connectors::build(settings)?;
        let server_name = match &settings.server_name {
            Some(n) => Some(
                ServerName::try_from(n.clone())
                    .map_err(|e| BuildError(format!("server_name {n:?}: {e}")))?,
            ),
            None => None,
        };
        let tls = Arc::new(UpstreamTls {
            id: NEXT_ID.fetch_add(1, Relaxed),
            pool: pool.to_string(),
            settings: settings.clone(),
            connectors: ArcSwap::from_pointee(connectors),
            server_name,
            reloads_ok: AtomicU64::new(0),
            reloads_failed: AtomicU64::new(0),
        });
        reload::watch(&tls, seen);
        Ok(tls)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;
    use crate::alpn::Alpn;
    use crate::connect::ConnectError;
    use crate::upstream::UpstreamStream;
    use weir_config::TlsVersion;
    use weir_testkit::certs::Ca;
    use weir_testkit::{tls::server_config, TlsFront};

    fn settings(ca: Option<PathBuf>, name: Option<&str>) -> PoolTls {
        PoolTls {
            ca,
            server_name: name.map(str::to_owned),
            cert: None,
            key: None,
            alpn: None,
            min_version: TlsVersion::V12,
        }
    }

    #[tokio::test]
    async fn verifies_the_name_and_says_why_not() {
        let dir = tempfile_dir();
        let ca = Ca::new("ca");
        let ca_file = ca.write(&dir, "ca");
        let (cert, key) = ca.leaf_files(&dir, "api", &["api.internal"]);
        let backend = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let front = TlsFront::spawn(
            backend.local_addr().unwrap(),
            server_config(&cert, &key, None).unwrap(),
        )
        .unwrap();
        let t = Duration::from_secs(5);
        let good = UpstreamTls::build(
            "test",
            &settings(Some(ca_file.clone()), Some("api.internal")),
        )
        .unwrap();
        let s = UpstreamStream::connect(front.addr(), t, Some(&good), Alpn::Http1, None)
            .await
            .unwrap();
        assert!(matches!(s, UpstreamStream::Tls(_)));
        assert!(!s.peer_gone());

        let wrong =
            UpstreamTls::build("test", &settings(Some(ca_file), Some("other.internal"))).unwrap();
        assert_ne!(wrong.id, good.id);
        match UpstreamStream::connect(front.addr(), t, Some(&wrong), Alpn::Http1, None).await {
            Err(e @ ConnectError::Tls { .. }) => {
                let text = e.to_string();
                assert!(text.contains("(as other.internal)"), "{text}");
                assert!(text.contains("server_name"), "{text}");
            }
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("a certificate for another name verified"),
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn an_http_pool_refuses_an_endpoint_that_picks_another_protocol() {
        let dir = tempfile_dir();
        let ca = Ca::new("ca");
        let ca_file = ca.write(&dir, "ca");
        let (cert, key) = ca.leaf_files(&dir, "api", &["api.internal"]);
        let mut h2 = rustls::ServerConfig::clone(&server_config(&cert, &key, None).unwrap());
        h2.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let front = TlsFront::spawn(front_target().await, Arc::new(h2)).unwrap();
        let mut offer = settings(Some(ca_file), Some("api.internal"));
        offer.alpn = Some(vec!["h2".into(), "http/1.1".into()]);
        let tls = UpstreamTls::build("test", &offer).unwrap();
        let t = Duration::from_secs(5);
        match UpstreamStream::connect(front.addr(), t, Some(&tls), Alpn::Http1, None).await {
            Err(ConnectError::Alpn { chosen, .. }) => assert_eq!(chosen, "h2"),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("connected to an endpoint that chose h2"),
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    /// An address for a TlsFront to relay to (nothing is relayed in these tests).
    async fn front_target() -> std::net::SocketAddr {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move { while l.accept().await.is_ok() {} });
        addr
    }

    #[tokio::test]
    async fn the_connect_timeout_covers_the_handshake() {
        // Accepts, then never answers the ClientHello.
        let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = silent.local_addr().unwrap();
        let hold = tokio::spawn(async move {
            let (_s, _) = silent.accept().await.unwrap();
            std::future::pending::<()>().await;
        });
        let dir = tempfile_dir();
        let ca = Ca::new("ca").write(&dir, "ca");
        let tls = UpstreamTls::build("test", &settings(Some(ca), Some("x.internal"))).unwrap();
        // Long enough for any loopback connect: what runs out is the handshake's time.
        match UpstreamStream::connect(addr, Duration::from_secs(1), Some(&tls), Alpn::Http1, None)
            .await
        {
            Err(ConnectError::HandshakeTimeout { .. }) => {}
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("a handshake nobody answered completed"),
        }
        hold.abort();
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_ca_file_that_does_not_read_is_a_build_error_naming_it() {
        let e = UpstreamTls::build("test", &settings(Some("/nonexistent/ca.pem".into()), None))
            .unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("ca: cannot read /nonexistent/ca.pem"),
            "{text}"
        );
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "weir-upstream-tls-{}-{}",
            std::process::id(),
            NEXT_ID.fetch_add(1, Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
