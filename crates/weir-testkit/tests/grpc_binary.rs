//! The `grpc-upstream` binary serves the Echo service until SIGTERM.
#![cfg(feature = "grpc")]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use weir_testkit::grpc::{grpc_client, EchoRequest};

#[tokio::test]
async fn serves_until_sigterm() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_grpc-upstream"))
        .args(["--listen", "127.0.0.1:0", "--name", "bin", "--threads", "1"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line.trim().strip_prefix("listening on ").expect(&line);
    let mut c = grpc_client(addr).await.unwrap();
    let r = c
        .unary(EchoRequest {
            message: "hi".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((r.message.as_str(), r.server.as_str()), ("hi", "bin"));
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    assert!(child.wait().unwrap().success(), "clean exit on SIGTERM");
}
