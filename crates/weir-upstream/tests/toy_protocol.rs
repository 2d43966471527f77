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

use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
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

use weir_codec::send::Payload;
use weir_metrics::reason::Reason;
use weir_transport::UpstreamStream;
use weir_upstream::custom::{Awaiting, CustomBody, CustomError, CustomSession, Outgoing};
use weir_upstream::endpoint::EndpointRt;
use weir_upstream::error::{Cause, Delivery, ExchangeError, Side, TryError};
use weir_upstream::health::checker;
use weir_upstream::pool::PoolRt;
use weir_upstream::{Dial, Opener, Opening, Reuse, SendFailed, SessionKind};

mod common;

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
            Ok(Box::new(session) as Box<dyn CustomSession>)
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
    fn send<'a>(mut self: Box<Self>, req: Outgoing<'a>) -> Awaiting<'a> {
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
                    Ok(Response::new(Box::new(body) as Box<dyn CustomBody>))
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
    fn take_reusable(&mut self) -> Option<Box<dyn CustomSession>> {
        match self.line {
            None => self.session.take().map(|s| s as Box<dyn CustomSession>),
            Some(_) => None,
        }
    }
}

/// The pool `[pools.toy]` as the config makes it, speaking toy.
fn toy_pool(addrs: &[std::net::SocketAddr], extra: &str) -> PoolRt {
    let mut pool = common::pool(addrs, extra);
    // The one line that makes the pool speak toy.
    pool.protocol = SessionKind::Custom(&TOY);
    pool
}

#[tokio::test]
async fn a_toy_protocol_is_balanced_and_its_sessions_reused() {
    let (a, a_conns) = common::server("a").await;
    let (b, b_conns) = common::server("b").await;
    let pool = toy_pool(&[a, b], "");
    let mut answers = Vec::new();
    for body in ["one", "two", "three", "four"] {
        answers.push(common::ask(&pool, "/greet", body).await.unwrap());
    }
    // Round robin across both endpoints; each one's second request came on the
    // connection its first opened, given back to the idle store in between.
    answers.sort();
    assert_eq!(
        answers,
        [
            "/greet four | b 1 2",
            "/greet one | a 1 1",
            "/greet three | a 1 2",
            "/greet two | b 1 1",
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
    let e = common::ask(&pool, "/greet", "hello").await.unwrap_err();
    assert_eq!((e.reason, e.side), (Reason::ConnectFailed, Side::Upstream));
    assert!(e.not_delivered());
}

/// The pool's health checks open their sessions through the seam too: a toy endpoint
/// thought down is found healthy once a probe, sent as a toy request, is answered.
#[tokio::test]
async fn a_toy_endpoint_is_health_checked_through_its_sessions() {
    let (a, a_conns) = common::server("a").await;
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
