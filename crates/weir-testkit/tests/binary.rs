use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};

use weir_testkit::client;

fn spawn(args: &[&str]) -> (std::process::Child, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fake-upstream"))
        .args(["--listen", "127.0.0.1:0", "--threads", "2"])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line.trim().strip_prefix("listening on ").expect(&line);
    (child, addr.parse().unwrap())
}

fn sigterm(child: &mut std::process::Child) {
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    assert!(child.wait().unwrap().success(), "clean exit on SIGTERM");
}

#[tokio::test]
async fn http_mode_serves_until_sigterm() {
    let (mut child, addr) = spawn(&[
        "--name",
        "bin",
        "--latency",
        "fixed:1ms",
        "--body-size",
        "10",
    ]);
    let r = client::get(addr, "/").await.unwrap();
    assert_eq!(r.header("x-upstream"), Some("bin"));
    assert_eq!(r.body, weir_testkit::pattern(10));
    sigterm(&mut child);
}

#[tokio::test]
async fn tcp_echo_mode() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (mut child, addr) = spawn(&["--name", "e", "--tcp-echo", "--greeting"]);
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"hi").await.unwrap();
    s.shutdown().await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    assert_eq!(out, b"e\nhi");
    sigterm(&mut child);
}
