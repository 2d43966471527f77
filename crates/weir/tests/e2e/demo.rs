//! `weir demo` works with no file: three named backends behind one listener.

use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use weir_testkit::client::{self, HttpConn};

use crate::common::{free_addr, Weir};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn demo_balances_three_named_backends() {
    let (listen, tls) = (free_addr(), free_addr());
    let mut w = Weir::command(
        &[
            "demo",
            "--listen",
            &listen.to_string(),
            "--tls-listen",
            &tls.to_string(),
        ],
        &[listen, tls],
    );
    let mut conn = HttpConn::connect(listen).await.unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..40 {
        seen.insert(conn.get("/").await.unwrap().text());
    }
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        ["demo-1\n", "demo-2\n", "demo-3\n"]
    );
    // Weights 1:1:2, from weir's own counts: the demo also sends a trickle of
    // its own requests, so one client's answers are not whole rounds, but
    // round robin keeps each endpoint within a request or two of its share.
    let metrics = client::get(w.admin, "/metrics").await.unwrap().text();
    let mut counts: Vec<f64> = metrics
        .lines()
        .filter(|l| {
            l.starts_with("weir_requests_total{listener=\"demo\",route=\"\",pool=\"web\",")
                && l.contains("code=\"200\"")
        })
        .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
        .collect();
    counts.sort_by(f64::total_cmp);
    let n: f64 = counts.iter().sum();
    assert_eq!(counts.len(), 3, "{metrics}");
    for (got, share) in counts.iter().zip([n / 4.0, n / 4.0, n / 2.0]) {
        assert!((got - share).abs() <= 2.0, "{counts:?} of {n}");
    }

    let req = Request::get("/")
        .header("host", "api.demo.local")
        .body(Full::new(Bytes::new()))
        .unwrap();
    assert_eq!(client::send(listen, req).await.unwrap().text(), "demo-3\n");

    // The same pool over HTTPS, with the self-signed certificate the demo made.
    let out = std::process::Command::new("curl")
        .args(["-sSk", "--max-time", "20"])
        .arg(format!("https://{tls}/headers"))
        .output()
        .unwrap();
    let body = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(body.contains(r#"["x-forwarded-proto","https"]"#), "{body}");

    w.signal(libc::SIGTERM);
    assert_eq!(w.wait_exit(Duration::from_secs(5)).code(), Some(0));
}

/// SIGTERM the moment the demo's listener accepts: the demo shuts down
/// cleanly (exit 0) rather than meeting the signal's default action.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sigterm_as_soon_as_the_demo_listens_is_a_clean_shutdown() {
    for _ in 0..5 {
        let listen = free_addr();
        let mut w = Weir::command(
            &[
                "demo",
                "--listen",
                &listen.to_string(),
                "--tls-listen",
                &free_addr().to_string(),
            ],
            &[],
        );
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(listen).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "the demo never listened"
            );
            std::thread::sleep(Duration::from_micros(200));
        }
        w.signal(libc::SIGTERM);
        let status = w.wait_exit(Duration::from_secs(10));
        assert_eq!(status.code(), Some(0), "{status}; log:\n{}", w.log_text());
    }
}
