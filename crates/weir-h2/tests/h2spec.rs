//! h2spec (every case of RFC 9113 and RFC 7541 it has) against weir-h2's server connection,
//! served by the bare responder of `examples/responder.rs`. test.sh installs h2spec.

use std::path::PathBuf;

// The example's connection loop, served in this process.
#[allow(dead_code)]
#[path = "../examples/responder.rs"]
mod responder;

/// h2spec's path: test.sh installs it under ~/.cache/weir-tools (or `WEIR_H2SPEC`).
fn h2spec() -> PathBuf {
    if let Ok(p) = std::env::var("WEIR_H2SPEC") {
        return p.into();
    }
    let p = PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/weir-tools/h2spec");
    assert!(
        p.exists(),
        "h2spec is not installed at {}: run ./test.sh, which installs it",
        p.display()
    );
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2spec_passes_every_case() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            tokio::spawn(responder::serve(sock));
        }
    });
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(h2spec())
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-o", "10"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let failed: Vec<&str> = text
        .split("Failures:")
        .nth(1)
        .unwrap_or("")
        .lines()
        .filter_map(|l| l.trim().strip_prefix("× "))
        .collect();
    assert!(failed.is_empty(), "{failed:?}\n{text}");
    assert!(text.contains("145 tests, 145 passed"), "{text}");
}
