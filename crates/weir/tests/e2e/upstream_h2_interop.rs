//! weir's HTTP/2 client (weir-h2) against another implementation's server: nginx with
//! `listen ... http2` (h2c with prior knowledge) as a pool's endpoint, run as a plain process
//! with its own config (installed by test.sh). nginx answers HEAD with its length and no
//! DATA (END_STREAM on the HEADERS), encodes with its own HPACK, and sends its own SETTINGS.

use std::process::Command;

use crate::common::{free_addr, one_pool, Weir};
use crate::proxy_protocol_interop::{nginx, wait_port};
use crate::upstream_h2::curl;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_h2c_pool_of_nginx_answers_get_head_and_post() {
    let (n, listen) = (free_addr(), free_addr());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let mut nginx = nginx(
        dir.path(),
        &format!(
            r#"
    access_log {d}/access.log;
    server {{
        listen {n} http2;
        location / {{
            add_header x-proto $server_protocol;
            return 200 "nginx $request_method $uri len=$content_length\n";
        }}
    }}
"#
        ),
    );
    wait_port(&mut nginx, n, &dir.path().join("error.log"));
    let eps = format!("endpoints = [{{ addr = \"{n}\" }}]");
    let _w = Weir::start(&one_pool(listen, &eps, "protocol = \"h2c\""), &[listen]);

    let got = curl(&[], &format!("http://{listen}/a"));
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    assert!(got.contains("x-proto: HTTP/2.0"), "nginx saw HTTP/2: {got}");
    assert!(got.ends_with("nginx GET /a len=\n"), "{got}");

    // HEAD: nginx says the length of the answer it would send, with no DATA.
    let got = curl(&["-I"], &format!("http://{listen}/a"));
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    assert!(
        got.to_ascii_lowercase().contains("content-length: 19"),
        "{got}"
    );

    let got = curl(
        &["--data-binary", "hello"],
        &format!("http://{listen}/post"),
    );
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    assert!(got.ends_with("nginx POST /post len=5\n"), "{got}");

    // Streams on the shared connection, several at once.
    let urls: Vec<String> = (0..8).map(|i| format!("http://{listen}/p{i}")).collect();
    let mut args = vec!["--parallel", "--parallel-immediate"];
    args.extend(urls.iter().map(String::as_str));
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "20"])
        .args(&args)
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout);
    for i in 0..8 {
        assert!(text.contains(&format!("nginx GET /p{i} len=\n")), "{text}");
    }
}
