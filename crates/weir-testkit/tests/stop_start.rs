mod common;

use std::time::Duration;

use common::{read_until_closed, send_get};
use tokio::net::TcpStream;
use weir_testkit::{client, HttpUpstream};

#[tokio::test]
async fn stop_drops_connections_and_refuses_start_listens_again() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let addr = up.addr();

    let mut idle = client::HttpConn::connect(addr).await.unwrap();
    assert_eq!(idle.get("/").await.unwrap().text(), "a\n");
    let mut hanging = TcpStream::connect(addr).await.unwrap();
    send_get(&mut hanging, "/?hang=1").await;
    while up.in_flight() == 0 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }

    up.stop().await;
    assert!(!up.is_running());
    // Both connections are gone at once; the hanging request never gets an answer.
    assert!(read_until_closed(&mut hanging, Duration::from_secs(1))
        .await
        .is_empty());
    assert!(idle.get("/").await.is_err());
    assert_eq!(up.in_flight(), 0);
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "refused while stopped"
    );

    up.start().await;
    assert_eq!(up.addr(), addr);
    assert_eq!(client::get(addr, "/").await.unwrap().text(), "a\n");

    // Flapping repeatedly works too.
    for _ in 0..3 {
        up.stop().await;
        up.start().await;
    }
    assert_eq!(client::get(addr, "/").await.unwrap().status, 200);
}
