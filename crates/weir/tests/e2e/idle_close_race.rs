//! The race between reusing a pooled upstream connection and the backend closing it for
//! idleness, run long enough to meet its rare outcomes: backends that close keep-alive
//! connections idle for 40 ms, clients POSTing every 34-46 ms, and weir on a busy host.
//!
//! Busy threads share weir's (lowered) priority, while the backends and the clients keep
//! theirs, as if they ran on other hosts: weir's tasks wait for a core, its timers fire
//! late and it learns of the backends' closes late, while the backends keep their clocks.
//! Retries are off: a request the backend never read must go on another connection
//! within its one try, so none is lost to the race however rare; and a POST it may have
//! read must never be sent twice.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use weir_testkit::client::HttpConn;
use weir_testkit::HttpUpstream;

use crate::common::{endpoints, free_addr, Weir};

/// Independent pools, each with its own backend and a few clients: each pool's
/// connections are reused at ages spread around the backend's idle timeout.
const POOLS: usize = 16;
const CLIENTS_PER_POOL: usize = 3;
/// Enough POSTs to meet an outcome seen once in about 20,000; the time cap keeps a very
/// slow machine from running the test for minutes...
const POSTS: u64 = 24_000;
const AT_MOST: Duration = Duration::from_secs(45);
/// ... unless fewer than this were made by then (a machine loaded far beyond the spinners
/// the test adds): the test goes on, up to `NO_LONGER`, until the race ran at this scale.
const AT_LEAST: u64 = 5_000;
const NO_LONGER: Duration = Duration::from_secs(150);
/// Busy threads per core, at weir's priority.
const SPIN_PER_CORE: usize = 2;
/// weir's and the busy threads' nice value (the test's own threads keep 0).
const NICE: i32 = 10;

#[derive(Default)]
struct Tally {
    ok: AtomicU64,
    failed: AtomicU64,
    /// The first few failures, for the assertion message.
    samples: Mutex<Vec<String>>,
}

impl Tally {
    fn fail(&self, what: String) {
        self.failed.fetch_add(1, Relaxed);
        let mut s = self.samples.lock().unwrap();
        if s.len() < 5 {
            s.push(what);
        }
    }

    fn done(&self) -> u64 {
        self.ok.load(Relaxed) + self.failed.load(Relaxed)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn posts_racing_idle_closes_on_a_busy_host_are_never_lost() {
    let mut ups = Vec::new();
    let mut listens = Vec::new();
    let mut toml = String::new();
    for p in 0..POOLS {
        let up = HttpUpstream::builder(&format!("u{p}"))
            .idle_close(Duration::from_millis(40))
            .spawn()
            .await
            .unwrap();
        let listen = free_addr();
        toml += &format!(
            "[listeners.l{p}]\nbind = \"{listen}\"\npool = \"p{p}\"\n\n\
             [pools.p{p}]\n{}\n\n[pools.p{p}.retry]\nattempts = 0\n\n",
            endpoints(&[(up.addr(), 1)])
        );
        ups.push(up);
        listens.push(listen);
    }
    let w = Weir::start(&toml, &listens);
    lower_priority(w.child.id());

    let stop = Arc::new(AtomicBool::new(false));
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let spinners: Vec<_> = (0..cores * SPIN_PER_CORE)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                // SAFETY: setpriority on the calling thread.
                unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, NICE) };
                let mut x = 0u64;
                while !stop.load(Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                }
            })
        })
        .collect();
    let tally = Arc::new(Tally::default());
    let started = Instant::now();
    let until = (started + AT_MOST, started + NO_LONGER);
    let mut tasks = Vec::new();
    for (p, &listen) in listens.iter().enumerate() {
        for c in 0..CLIENTS_PER_POOL {
            let id = p * CLIENTS_PER_POOL + c;
            tasks.push(tokio::spawn(client(listen, id, until, tally.clone())));
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    stop.store(true, Relaxed);
    for s in spinners {
        s.join().unwrap();
    }

    let (ok, failed) = (tally.ok.load(Relaxed), tally.failed.load(Relaxed));
    let opened: u64 = ups.iter().map(|u| u.connections()).sum();
    let twice: u64 = ups.iter().map(|u| u.duplicates()).sum();
    // What the race did this time, for whoever reads the test's output.
    eprintln!("{ok} POSTs answered, {failed} failed, {opened} upstream connections opened");
    let samples = tally.samples.lock().unwrap();
    assert_eq!(failed, 0, "{failed} of {}: {samples:#?}", ok + failed);
    assert_eq!(twice, 0, "POSTs that reached a backend twice");
    // However slow the machine, the race ran at scale.
    assert!(ok >= AT_LEAST, "only {ok} POSTs in {NO_LONGER:?}");
}

/// One keep-alive client POSTing to /echo every 34-46 ms, until the test has its POSTs or
/// `until.0` (`until.1` while it has fewer than `AT_LEAST`); every answer but a 200 echoing
/// the body is a failure.
async fn client(listen: SocketAddr, id: usize, until: (Instant, Instant), tally: Arc<Tally>) {
    let mut conn = HttpConn::connect(listen).await.unwrap();
    // xorshift, seeded per client: pauses spread over the whole range.
    let mut rng = (id as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut n = 0u64;
    let more = |now: Instant, done: u64| {
        done < POSTS && (now < until.0 || (done < AT_LEAST && now < until.1))
    };
    while more(Instant::now(), tally.done()) {
        n += 1;
        let body = Bytes::from(format!("client {id} request {n}"));
        let req = Request::post("/echo")
            .header("x-request-id", format!("{id}-{n}"))
            .body(Full::new(body.clone()))
            .unwrap();
        match conn.send(req).await {
            Ok(r) if r.status == 200 && r.body == body => {
                tally.ok.fetch_add(1, Relaxed);
            }
            Ok(r) => tally.fail(format!(
                "{} {:?} {}",
                r.status,
                r.header("x-weir-reason"),
                r.text()
            )),
            Err(e) => tally.fail(format!("client error: {e}")),
        }
        if conn.is_closed() {
            tally.fail("weir closed the client connection".into());
            conn = HttpConn::connect(listen).await.unwrap();
        }
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        tokio::time::sleep(Duration::from_millis(34 + rng % 13)).await;
    }
}

/// Lowers every thread of process `pid` (weir's runtime has started them all by the time
/// it listens) to [`NICE`].
fn lower_priority(pid: u32) {
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let tid: u32 = t.unwrap().file_name().to_str().unwrap().parse().unwrap();
        // SAFETY: setpriority on a thread of our own child.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, NICE) };
    }
}
