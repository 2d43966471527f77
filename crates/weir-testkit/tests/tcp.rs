use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use weir_testkit::TcpUpstream;

async fn wait_for(mut cond: impl FnMut() -> bool) {
    for _ in 0..500 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    panic!("condition not reached");
}

#[tokio::test]
async fn greeting_echo_and_half_close() {
    let up = TcpUpstream::echo("t", true).await.unwrap();
    let mut s = TcpStream::connect(up.addr()).await.unwrap();
    let mut hello = [0u8; 2];
    s.read_exact(&mut hello).await.unwrap();
    assert_eq!(&hello, b"t\n");

    s.write_all(b"ping").await.unwrap();
    let mut back = [0u8; 4];
    s.read_exact(&mut back).await.unwrap();
    assert_eq!(&back, b"ping");

    // Half-close: we stop writing, still receive the rest, then see the server's FIN.
    s.write_all(b"last words").await.unwrap();
    s.shutdown().await.unwrap();
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).await.unwrap();
    assert_eq!(rest, b"last words");
    assert_eq!(up.connections(), 1);
    wait_for(|| up.active() == 0).await;
}

#[tokio::test]
async fn no_greeting_and_stop_start() {
    let up = TcpUpstream::echo("t", false).await.unwrap();
    let addr = up.addr();
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"x").await.unwrap();
    let mut b = [0u8; 1];
    s.read_exact(&mut b).await.unwrap();
    assert_eq!(&b, b"x", "no greeting before the echo");
    assert_eq!(up.active(), 1);

    up.stop().await;
    assert_eq!(up.active(), 0);
    assert!(
        matches!(s.read(&mut b).await, Ok(0) | Err(_)),
        "dropped on stop"
    );
    assert!(TcpStream::connect(addr).await.is_err());

    up.start().await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"y").await.unwrap();
    s.read_exact(&mut b).await.unwrap();
    assert_eq!(&b, b"y");
    assert_eq!(up.connections(), 2);
}
