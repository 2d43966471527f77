//! The upstream session seam is open: a protocol weir-codec knows nothing of
//! ("toy": one request line, one answer line, over TCP) becomes a pool's
//! protocol with new code of its own and ONE line,
//! `pool.protocol = SessionKind::Custom(&TOY)`, and then gets what every pool
//! has: balancing, the exchange (connect, send, the typed try errors), the
//! idle store's reuse, health checks.
//!
//! What such a protocol adds (see weir-upstream's `custom.rs`): an `Opener`
//! (how a connected stream becomes a session, pooled or multiplexed), a
//! `CustomSession` (send one request, answer head back) and a `CustomBody`
//! (the answer, owning the session until read); a multiplexed protocol a
//! `CustomCarrier` too. In the tree, the one line is an arm in `SessionKind::of`.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::request::Parts;
use http::Response;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

use weir_codec::added::Added;
use weir_codec::send::{HeadTimer, Payload};
use weir_metrics::reason::Reason;
use weir_transport::UpstreamStream;
use weir_upstream::balance::PickKey;
use weir_upstream::custom::{
    CustomBody, CustomError, CustomSession, Opener, Opening, Outgoing, Sending,
};
use weir_upstream::endpoint::EndpointRt;
use weir_upstream::error::{Cause, Delivery, ExchangeError, Limit, Side, TryError};
use weir_upstream::health::checker;
use weir_upstream::idle::Conn;
use weir_upstream::pool::{PoolRt, PoolShared};
use weir_upstream::{
    exchange, Dial, Exchange, Exchanged, RecvBody, Reuse, SendFailed, Session, SessionKind,
};

/// The toy protocol: `PATH BODY\n` out, one line back.
struct Toy;

static TOY: Toy = Toy;

impl Opener for Toy {
    fn name(&self) -> &'static str {
        "toy"
    }

    fn reuse(&self) -> Reuse {
        Reuse::Pooled
    }

    fn open<'a>(&'a self, stream: UpstreamStream, _dial: Dial<'a>) -> Opening<'a> {
        Box::pin(async move {
            let session = ToySession {
                io: BufReader::new(stream),
                broken: false,
            };
            Ok(Session::Custom(Box::new(session)))
        })
    }
}

struct ToySession {
    io: BufReader<UpstreamStream>,
    broken: bool,
}

impl ToySession {
    async fn ask(&mut self, parts: &Parts, body: Bytes) -> std::io::Result<Bytes> {
        let mut line = format!("{} ", parts.uri.path()).into_bytes();
        line.extend_from_slice(&body);
        line.push(b'\n');
        self.io.get_mut().write_all(&line).await?;
        let mut answer = Vec::new();
        if self.io.read_until(b'\n', &mut answer).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        answer.pop();
        Ok(answer.into())
    }
}

impl CustomSession for ToySession {
    fn send<'a>(mut self: Box<Self>, req: Outgoing<'a>) -> Sending<'a> {
        Box::pin(async move {
            let Outgoing {
                parts,
                payload,
                timer,
                reused,
                ..
            } = req;
            let body = match payload {
                Payload::Bytes(b) => b,
                Payload::Stream(s) => s.collect().await.map(|c| c.to_bytes()).unwrap_or_default(),
            };
            let wait = timer.cap.unwrap_or(timer.started + Duration::from_secs(5));
            let answer = tokio::time::timeout_at(wait.into(), self.ask(parts, body)).await;
            match answer {
                Ok(Ok(line)) => {
                    let body = ToyBody {
                        line: Some(line),
                        session: Some(self),
                    };
                    Ok(Response::new(RecvBody::Custom(Box::new(body))))
                }
                Ok(Err(e)) => Err(SendFailed {
                    error: TryError {
                        reason: Reason::UpstreamReset,
                        side: Side::Upstream,
                        delivery: Delivery::MaybeDelivered,
                        reused,
                        cause: Cause::Exchange(ExchangeError::Custom(Box::new(e))),
                    },
                    unsent: None,
                    answered: false,
                    silent_for: None,
                }),
                Err(_) => Err(SendFailed {
                    error: TryError {
                        reason: Reason::UpstreamTimeout,
                        side: Side::Upstream,
                        delivery: Delivery::MaybeDelivered,
                        reused,
                        cause: Cause::Timeout {
                            limit: timer.limit,
                            ran_out: None,
                        },
                    },
                    unsent: None,
                    answered: false,
                    silent_for: None,
                }),
            }
        })
    }

    fn is_closed(&self) -> bool {
        self.broken
    }
}

/// The answer line; it owns the session until it was read.
struct ToyBody {
    line: Option<Bytes>,
    session: Option<Box<ToySession>>,
}

impl Body for ToyBody {
    type Data = Bytes;
    type Error = CustomError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, CustomError>>> {
        Poll::Ready(self.line.take().map(|l| Ok(Frame::data(l))))
    }

    fn is_end_stream(&self) -> bool {
        self.line.is_none()
    }
}

impl CustomBody for ToyBody {
    fn take_reusable(&mut self) -> Option<Session> {
        match self.line {
            None => self
                .session
                .take()
                .map(|s| Session::Custom(s as Box<dyn CustomSession>)),
            Some(_) => None,
        }
    }
}

/// A toy server: answers `NAME CONN N PATH BODY` (its n-th connection, the n-th request
/// on it). Counts the connections it accepted.
async fn server(name: &'static str) -> (SocketAddr, Arc<AtomicUsize>) {
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
                    let answer = format!("{name} {conn} {n} {line}\n");
                    if w.write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, accepted)
}

fn toy_pool(addrs: &[SocketAddr], extra: &str) -> PoolRt {
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
    let mut pool = PoolRt::new(
        "toy".into(),
        &cfg.pools["toy"],
        eps,
        PoolShared::default(),
        None,
    );
    // The one line that makes the pool speak toy.
    pool.protocol = SessionKind::Custom(&TOY);
    pool
}

/// One request as weir-pipeline's tries send it: the pool picks the endpoint, the
/// exchange checks out or connects, and the answer's session goes back to the idle
/// store as weir-http's body does once read.
async fn ask(pool: &PoolRt, path: &str, body: &'static str) -> Result<String, TryError> {
    let i = pool.choose(&PickKey::default(), &|_| true).unwrap();
    let ep = &pool.endpoints[i];
    let (parts, ()) = http::Request::post(path).body(()).unwrap().into_parts();
    let now = Instant::now();
    let x = Exchange {
        endpoint: ep,
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
    let Exchanged {
        resp, born, uses, ..
    } = exchange(
        x,
        Payload::Bytes(body.into()),
        timer,
        &mut took,
        &mut unsent,
    )
    .await?;
    let mut body = resp.into_body();
    let answer = (&mut body).collect().await.unwrap().to_bytes();
    if let Some(session) = body.take_reusable() {
        let conn = Conn {
            session,
            born,
            uses,
            tls: 0,
        };
        ep.idle.checkin(conn, pool.idle_timeout, Instant::now());
    }
    Ok(String::from_utf8(answer.to_vec()).unwrap())
}

#[tokio::test]
async fn a_toy_protocol_is_balanced_and_its_sessions_reused() {
    let (a, a_conns) = server("a").await;
    let (b, b_conns) = server("b").await;
    let pool = toy_pool(&[a, b], "");
    let mut answers = Vec::new();
    for body in ["one", "two", "three", "four"] {
        answers.push(ask(&pool, "/greet", body).await.unwrap());
    }
    // Round robin across both endpoints; each one's second request came on the
    // connection its first opened, given back to the idle store in between.
    answers.sort();
    assert_eq!(
        answers,
        [
            "a 1 1 /greet one",
            "a 1 2 /greet three",
            "b 1 1 /greet two",
            "b 1 2 /greet four",
        ]
    );
    assert_eq!((a_conns.load(Relaxed), b_conns.load(Relaxed)), (1, 1));
    for ep in &pool.endpoints {
        assert_eq!(ep.idle.len(), 1, "{}", ep.addr);
    }
}

#[tokio::test]
async fn a_toy_endpoint_that_is_down_fails_the_try_as_a_connect_error() {
    // A port nothing listens on (bound, then let go).
    let gone = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = gone.local_addr().unwrap();
    drop(gone);
    let pool = toy_pool(&[addr], "");
    let e = ask(&pool, "/greet", "hello").await.unwrap_err();
    assert_eq!((e.reason, e.side), (Reason::ConnectFailed, Side::Upstream));
    assert!(e.not_delivered());
}

/// The pool's health checks open their sessions through the seam too: a toy endpoint
/// thought down is found healthy once a probe, sent as a toy request, is answered.
#[tokio::test]
async fn a_toy_endpoint_is_health_checked_through_its_sessions() {
    let (a, a_conns) = server("a").await;
    let health = "[pools.toy.health]\ncheck = \"http\"\ninterval = \"2s\"\n\
                  timeout = \"1s\"\nrise = 1\nfall = 1\n";
    let pool = toy_pool(&[a], health);
    let ep = Arc::new(EndpointRt::new("toy".into(), a, false, false));
    assert!(!ep.health.is_up());
    let _checker = checker::start(
        ep.clone(),
        pool.health.clone(),
        false,
        None,
        pool.protocol,
        None,
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ep.health.is_up() {
        assert!(Instant::now() < deadline, "no probe was answered");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(a_conns.load(Relaxed) >= 1);
}
