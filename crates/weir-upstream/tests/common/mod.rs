//! What the toy protocols' tests share: a line server to talk to, a pool as the
//! config makes it, and one request sent the way weir-pipeline's tries send it.
// Each test file uses a part.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

use weir_codec::added::Added;
use weir_codec::send::{HeadTimer, Payload};
use weir_upstream::balance::PickKey;
use weir_upstream::endpoint::EndpointRt;
use weir_upstream::error::{Limit, TryError};
use weir_upstream::idle::PooledSession;
use weir_upstream::pool::{PoolRt, PoolShared};
use weir_upstream::{exchange, Exchange, Exchanged};

/// A line server: answers each line `LINE` with `LINE | NAME CONN N` (its CONN-th
/// connection, the N-th line on it), in order. Counts the connections it accepted.
pub async fn server(name: &'static str) -> (SocketAddr, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        loop {
            let (s, _) = l.accept().await.unwrap();
            let conn = count.fetch_add(1, Relaxed) + 1;
            tokio::spawn(async move {
                let (r, mut w) = s.into_split();
                let mut lines = BufReader::new(r).lines();
                let mut n = 0;
                while let Ok(Some(line)) = lines.next_line().await {
                    n += 1;
                    let answer = format!("{line} | {name} {conn} {n}\n");
                    if w.write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, accepted)
}

/// The pool `[pools.toy]` with these endpoints and `extra` settings, as weir builds it
/// from the config (it speaks HTTP/1.1 until told otherwise).
pub fn pool(addrs: &[SocketAddr], extra: &str) -> PoolRt {
    let endpoints: Vec<String> = addrs
        .iter()
        .map(|a| format!("{{ addr = \"{a}\" }}"))
        .collect();
    let source = format!(
        "[listeners.web]\nbind = \"127.0.0.1:0\"\nprotocol = \"http\"\npool = \"toy\"\n\n\
         [pools.toy]\nendpoints = [{}]\n{extra}",
        endpoints.join(", ")
    );
    let cfg = weir_config::parse_str(&source, "toy.toml").unwrap().config;
    let eps = addrs
        .iter()
        .map(|a| Arc::new(EndpointRt::new("toy".into(), *a, false, true)))
        .collect();
    PoolRt::new(
        "toy".into(),
        &cfg.pools["toy"],
        eps,
        PoolShared::default(),
        None,
    )
}

/// One try as weir-pipeline's tries make it: the pool picks the endpoint (its index
/// comes back), the exchange checks out, claims or connects, and sends.
pub async fn send(
    pool: &PoolRt,
    path: &str,
    body: &'static str,
) -> Result<(usize, Exchanged), TryError> {
    let i = pool.choose(&PickKey::default(), &|_| true).unwrap();
    let (parts, ()) = http::Request::post(path).body(()).unwrap().into_parts();
    let now = Instant::now();
    let x = Exchange {
        endpoint: &pool.endpoints[i],
        parts: &parts,
        added: &Added::NONE,
        connect_timeout: pool.connect_timeout,
        tls: None,
        cap_of: Limit::request_timeout(pool.request_timeout),
        fresh_only: false,
        proxy_header: None,
        protocol: pool.protocol,
        max_streams: pool.max_streams_per_conn,
        idle_timeout: pool.idle_timeout,
        ping: None,
        max_age: pool.max_conn_age,
        max_uses: pool.max_requests_per_conn,
    };
    let timer = HeadTimer {
        started: now,
        limit: pool.response_timeout,
        cap: Some(now + pool.request_timeout),
    };
    let (mut took, mut unsent) = (Duration::ZERO, None);
    let payload = Payload::Bytes(body.into());
    let done = exchange(x, payload, timer, &mut took, &mut unsent).await?;
    Ok((i, done))
}

/// One request and its answer's text; the session then goes back to the idle store
/// if it can carry another, as weir-http's body gives it back once read.
pub async fn ask(pool: &PoolRt, path: &str, body: &'static str) -> Result<String, TryError> {
    let (
        i,
        Exchanged {
            resp, born, uses, ..
        },
    ) = send(pool, path, body).await?;
    let mut body = resp.into_body();
    let answer = (&mut body).collect().await.unwrap().to_bytes();
    if let Some(session) = body.take_reusable() {
        let conn = PooledSession {
            session,
            born,
            uses,
            tls: 0,
        };
        let ep = &pool.endpoints[i];
        ep.idle.checkin(conn, pool.idle_timeout, Instant::now());
    }
    Ok(String::from_utf8(answer.to_vec()).unwrap())
}
