//! A response the backend cuts after its head is a failure everywhere weir
//! reports: the client sees the cut, the request counts with
//! reason `upstream_reset` (not as a success), the access log says so, and
//! the endpoint's passive ejection counts it.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use weir_testkit::client;
use weir_testkit::HttpUpstream;

use crate::common::{endpoints, free_addr, Weir};
use crate::scripted::{Act, Scripted};

/// The value of the metric line starting with `prefix` (name and labels).
fn metric(text: &str, prefix: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_body_cut_short_counts_as_upstream_reset_and_ejects_its_endpoint() {
    let cutter = Scripted::spawn(&[Act::CutBody]).await;
    let good = HttpUpstream::spawn("good").await.unwrap();
    let listen = free_addr();
    let dir = tempfile::tempdir().unwrap();
    let access = dir.path().join("access.log");
    let cfg = format!(
        "[listeners.web]\nbind = \"{listen}\"\npool = \"app\"\naccess_log = \"{}\"\n\n\
         [pools.app]\n{}\n[pools.app.health]\neject_after = 3\neject_time = \"60s\"\n",
        access.display(),
        endpoints(&[(cutter.addr, 1), (good.addr(), 1)]),
    );
    let w = Weir::start(&cfg, &[listen]);

    // Round robin gives the cutter every other request until it is ejected
    // after its third cut; then only the good endpoint answers.
    let mut cut = 0;
    for i in 0..12 {
        let req = Request::post("/order")
            .body(Full::new(Bytes::from(format!("order-{i}"))))
            .unwrap();
        match client::send(listen, req).await {
            Ok(r) => assert_eq!(r.status, 200),
            Err(_) => cut += 1,
        }
    }
    assert_eq!(cut, 3, "the client saw {cut} cut responses");
    assert_eq!(cutter.bodies().len(), 3);
    assert_eq!(good.requests(), 9);

    let m = client::get(w.admin, "/metrics").await.unwrap().text();
    let ep = cutter.addr.to_string();
    let reset = metric(
        &m,
        &format!(
            "weir_requests_total{{listener=\"web\",route=\"\",pool=\"app\",endpoint=\"{ep}\",code=\"200\",reason=\"upstream_reset\"}}"
        ),
    );
    assert_eq!(reset, 3.0, "{m}");
    let ok = metric(
        &m,
        &format!(
            "weir_requests_total{{listener=\"web\",route=\"\",pool=\"app\",endpoint=\"{ep}\",code=\"200\",reason=\"\"}}"
        ),
    );
    assert_eq!(ok, 0.0, "cut responses counted as successes: {m}");
    let ejections = metric(
        &m,
        &format!("weir_ejections_total{{pool=\"app\",endpoint=\"{ep}\"}}"),
    );
    assert_eq!(ejections, 1.0, "{m}");

    // Every request has its access log line (written when its response is
    // done); the three cut ones carry the reason.
    let deadline = Instant::now() + Duration::from_secs(10);
    let lines = loop {
        let text = std::fs::read_to_string(&access).unwrap_or_default();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if lines.len() >= 12 || Instant::now() > deadline {
            break lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(lines.len(), 12);
    let reasons: Vec<_> = lines
        .iter()
        .filter(|l| l["endpoint"] == ep.as_str())
        .map(|l| l["reason"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(reasons, ["upstream_reset"; 3], "{lines:?}");
}
