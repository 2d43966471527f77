//! `release/train.sh`: the workload `release/pgo.sh` profiles weir under before the build
//! to deploy. Run here small through the debug build, so that a change to weir's config or
//! behaviour that breaks the workload fails the test command, not the next release build.

use std::path::Path;
use std::process::Command;

use crate::common::{free_port, WEIR};

#[test]
fn the_pgo_training_workload_runs_clean_through_weir() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // The testkit's upstream binaries sit beside weir's in the target directory.
    let testkit = Path::new(WEIR).parent().unwrap();
    let ports: Vec<String> = (0..8).map(|_| free_port().to_string()).collect();
    let out = Command::new(root.join("release/train.sh"))
        .arg(WEIR)
        .arg("2")
        .env("TESTKIT", testkit)
        .env("TRAIN_PORTS", ports.join(" "))
        .output()
        .expect("release/train.sh runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "train.sh failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    // Every phase ran (2 % of each), through to the TCP relay and weir's clean exit.
    for phase in [
        "HTTP/1.1, small answers: 400 requests",
        "HTTP/1.1, a members' chain: 200 requests",
        "HTTP/1.1, the members' chain refusing: 4 requests",
        "HTTP/1.1, an auth service asked: 60 requests",
        "HTTP/1.1, error pages: 40 requests",
        "HTTP/1.1, redirects to HTTPS: 40 requests",
        "gRPC over h2c: 400 requests",
        "HTTPS, a handshake each: 10 requests",
        "gRPC over TLS: 100 requests",
        "TCP relay: 4 connections",
    ] {
        assert!(stdout.contains(phase), "no `{phase}` in:\n{stdout}");
    }
}
