//! A multiplexed protocol outside weir-codec gets the idle store's sharing as
//! HTTP/2 does: "toy-mux" tags each request line with an id (`ID PATH BODY`),
//! answers come back tagged with it, and many requests are in flight on one
//! connection, its `CustomCarrier`. The store keeps the carrier while it has
//! room (the pool's `max_streams_per_conn`) and each request claims a session
//! on it; a request finding it full opens another.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http::Response;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, WriteHalf};
use tokio::sync::oneshot;

use weir_codec::send::Payload;
use weir_metrics::reason::Reason;
use weir_transport::UpstreamStream;
use weir_upstream::custom::{
    Awaiting, CustomBody, CustomCarrier, CustomError, CustomSession, Outgoing,
};
use weir_upstream::error::{Cause, Delivery, ExchangeError, Side, TryError};
use weir_upstream::{Dial, Opener, Opening, Reuse, SendFailed, SessionKind, UpstreamResponseBody};

mod common;

struct Mux;

static MUX: Mux = Mux;

impl Opener for Mux {
    fn name(&self) -> &'static str {
        "toy-mux"
    }

    fn reuse(&self) -> Reuse {
        Reuse::Multiplexed
    }

    fn open<'a>(&'a self, stream: UpstreamStream, dial: Dial<'a>) -> Opening<'a> {
        Box::pin(async move {
            let carrier = Line::start(stream, dial.max_streams);
            Ok(carrier.claim().expect("a new connection has room"))
        })
    }
}

/// One toy-mux connection: requests go out under a lock, a task reads the answers and
/// hands each to the request whose id it carries.
struct Line {
    out: tokio::sync::Mutex<WriteHalf<UpstreamStream>>,
    waiting: Mutex<HashMap<u64, oneshot::Sender<Bytes>>>,
    next_id: AtomicU64,
    active: AtomicU32,
    uses: AtomicU32,
    max: u32,
    born: Instant,
    dead: AtomicBool,
}

impl Line {
    fn start(stream: UpstreamStream, max: u32) -> Arc<Line> {
        let (r, w) = tokio::io::split(stream);
        let line = Arc::new(Line {
            out: tokio::sync::Mutex::new(w),
            waiting: Mutex::default(),
            next_id: AtomicU64::new(1),
            active: AtomicU32::new(0),
            uses: AtomicU32::new(0),
            max,
            born: Instant::now(),
            dead: AtomicBool::new(false),
        });
        let reader = line.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(r).lines();
            while let Ok(Some(answer)) = lines.next_line().await {
                let Some((id, rest)) = answer.split_once(' ') else {
                    break;
                };
                let Ok(id) = id.parse::<u64>() else { break };
                if let Some(tx) = reader.waiting.lock().unwrap().remove(&id) {
                    let _ = tx.send(Bytes::from(rest.to_string()));
                }
            }
            // Waiting requests see their sender dropped.
            reader.dead.store(true, Relaxed);
            reader.waiting.lock().unwrap().clear();
        });
        line
    }
}

impl CustomCarrier for Line {
    fn claim(self: Arc<Self>) -> Option<Box<dyn CustomSession>> {
        if self.dead.load(Relaxed) {
            return None;
        }
        self.active
            .fetch_update(Relaxed, Relaxed, |n| (n < self.max).then_some(n + 1))
            .ok()?;
        self.uses.fetch_add(1, Relaxed);
        Some(Box::new(Claim { line: self }))
    }

    fn is_dead(&self) -> bool {
        self.dead.load(Relaxed)
    }

    fn born(&self) -> Instant {
        self.born
    }

    fn uses(&self) -> u32 {
        self.uses.load(Relaxed)
    }

    fn tls(&self) -> u64 {
        0
    }

    fn is_idle(&self) -> bool {
        self.active.load(Relaxed) == 0
    }

    fn idle_expired(&self, _now_ms: u64) -> bool {
        false
    }
}

/// A session: one claim on a line, given up when dropped (with its answer's body).
struct Claim {
    line: Arc<Line>,
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.line.active.fetch_sub(1, Relaxed);
    }
}

fn broken(reused: bool, why: &'static str) -> SendFailed {
    SendFailed {
        error: TryError {
            reason: Reason::UpstreamReset,
            side: Side::Upstream,
            delivery: Delivery::MaybeDelivered,
            reused,
            cause: Cause::Exchange(ExchangeError::Custom(why.into())),
        },
        unsent: None,
        answered: false,
        silent_for: None,
    }
}

impl CustomSession for Claim {
    fn send<'a>(self: Box<Self>, req: Outgoing<'a>) -> Awaiting<'a> {
        Box::pin(async move {
            let body = match req.payload {
                Payload::Bytes(b) => b,
                Payload::Stream(s) => s.collect().await.map(|c| c.to_bytes()).unwrap_or_default(),
            };
            let id = self.line.next_id.fetch_add(1, Relaxed);
            let (tx, rx) = oneshot::channel();
            self.line.waiting.lock().unwrap().insert(id, tx);
            let mut out = format!("{id} {} ", req.parts.uri.path()).into_bytes();
            out.extend_from_slice(&body);
            out.push(b'\n');
            let wrote = self.line.out.lock().await.write_all(&out).await;
            if wrote.is_err() {
                return Err(broken(req.reused, "the connection broke"));
            }
            match rx.await {
                Ok(answer) => {
                    let body = MuxBody {
                        answer: Some(answer),
                        _claim: self,
                    };
                    Ok(Response::new(Box::new(body) as Box<dyn CustomBody>))
                }
                Err(_) => Err(broken(req.reused, "the connection closed unanswered")),
            }
        })
    }

    fn is_closed(&self) -> bool {
        self.line.dead.load(Relaxed)
    }

    fn carrier(&self) -> Option<Arc<dyn CustomCarrier>> {
        Some(self.line.clone())
    }
}

/// The answer; it holds the claim, so the line's room comes back when it is dropped.
struct MuxBody {
    answer: Option<Bytes>,
    _claim: Box<Claim>,
}

impl Body for MuxBody {
    type Data = Bytes;
    type Error = CustomError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, CustomError>>> {
        Poll::Ready(self.answer.take().map(|a| Ok(Frame::data(a))))
    }

    fn is_end_stream(&self) -> bool {
        self.answer.is_none()
    }
}

// A claim is not handed back: it ends when the body is dropped.
impl CustomBody for MuxBody {}

async fn text(body: &mut UpstreamResponseBody) -> String {
    let bytes = body.collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[tokio::test]
async fn a_multiplexed_toy_protocol_shares_its_connections() {
    let (a, conns) = common::server("a").await;
    let mut pool = common::pool(&[a], "");
    // The one line that makes the pool speak toy-mux.
    pool.protocol = SessionKind::Custom(&MUX);
    pool.max_streams_per_conn = 2;
    let ep = &pool.endpoints[0];
    // Two requests in flight (their answers not dropped) share the first connection;
    // the third finds it full and opens another.
    let (_, one) = common::send(&pool, "/m", "one").await.unwrap();
    let (_, two) = common::send(&pool, "/m", "two").await.unwrap();
    let (_, three) = common::send(&pool, "/m", "three").await.unwrap();
    let mut bodies = [one, two, three].map(|x| x.resp.into_body());
    let mut answers = Vec::new();
    for b in &mut bodies {
        answers.push(text(b).await);
    }
    assert_eq!(
        answers,
        ["/m one | a 1 1", "/m two | a 1 2", "/m three | a 2 1"]
    );
    assert_eq!(conns.load(Relaxed), 2);
    // Both connections stay in the store; busy, then idle once the answers are let go.
    assert_eq!(ep.idle.len(), 0);
    drop(bodies);
    assert_eq!(ep.idle.len(), 2);
    // The next request claims on the newest again: no new connection.
    let answer = common::ask(&pool, "/m", "four").await.unwrap();
    assert_eq!(answer, "/m four | a 2 2");
    assert_eq!(conns.load(Relaxed), 2);
}
