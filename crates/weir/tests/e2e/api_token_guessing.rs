//! The admin token cannot be guessed at full speed (docs/API.md, Security): after a few wrong
//! tokens from one source address, that source's attempts are refused with 429 without
//! being checked, for a backoff that grows; the log says so in few lines, a metric counts
//! them, and other sources are not affected.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;
use weir_testkit::client::{HttpConn, Resp};

use crate::common::{free_addr, one_pool, Weir};

const TOKEN: &str = "the-right-token";

/// A call that needs the token and changes nothing when it passes: a delete without
/// `If-Match` answers 428 `precondition-required` once the token is accepted.
const PASSED: StatusCode = StatusCode::PRECONDITION_REQUIRED;

async fn attempt(conn: &mut HttpConn, token: &str) -> Resp {
    let req = Request::delete("/api/v1/pools/nothing-here")
        .header("authorization", format!("Bearer {token}"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    conn.send(req).await.expect("the admin listener answers")
}

async fn from(source: &str, admin: SocketAddr) -> HttpConn {
    let ip: IpAddr = source.parse().unwrap();
    HttpConn::connect_from(ip, admin).await.unwrap()
}

/// The value of the metric line that starts with `name`.
fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_tokens_from_one_source_are_refused_unchecked_and_logged_in_few_lines() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    let listen = free_addr();
    let toml = format!(
        "[admin]\ntoken_file = {:?}\n{}",
        token.display().to_string(),
        one_pool(listen, "endpoints = [{ addr = \"127.0.0.1:9\" }]", "")
    );
    let w = tokio::task::block_in_place(|| Weir::start(&toml, &[listen]));
    let admin = w.admin;

    // 3,000 wrong tokens from 127.0.0.1 on one keep-alive connection, and on until the
    // backoff is 4 s or more (so that the right token below comes well within it).
    let mut attacker = from("127.0.0.1", admin).await;
    let started = Instant::now();
    let (mut wrong, mut throttled) = (0u64, 0u64);
    let mut first = Vec::new();
    let mut i = 0;
    loop {
        let r = attempt(&mut attacker, &format!("guess-{i}")).await;
        i += 1;
        if first.len() < 5 {
            first.push(r.status);
        }
        let mut long_wait = false;
        match r.status {
            StatusCode::UNAUTHORIZED => wrong += 1,
            StatusCode::TOO_MANY_REQUESTS => {
                throttled += 1;
                assert_eq!(r.header("content-type"), Some("application/problem+json"));
                let p: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
                assert_eq!(p["type"], "urn:weir:problem:too-many-attempts", "{p}");
                let after: u64 = r.header("retry-after").unwrap().parse().unwrap();
                assert!((1..=60).contains(&after), "Retry-After: {after}");
                long_wait = after >= 4;
            }
            s => panic!("attempt {i}: {s} {}", r.text()),
        }
        if i >= 3000 && long_wait {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{wrong} wrong, {throttled} refused"
        );
    }
    let took = started.elapsed();
    // Five wrong tokens are checked; then one more each time a backoff (1 s, 2 s, 4 s, ...)
    // ran out during the run.
    assert_eq!(&first[..], &[StatusCode::UNAUTHORIZED; 5]);
    assert!(wrong <= 12, "{wrong} wrong tokens checked in {took:?}");
    assert!(
        throttled >= 2900,
        "{throttled} refused unchecked in {took:?}"
    );

    // The right token from that source is refused too while the backoff lasts: a guess
    // that happens to be right is not told apart.
    let r = attempt(&mut attacker, TOKEN).await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{}", r.text());
    throttled += 1;

    // The log: a line when the source starts failing, then at most one every 10 s that
    // sums up what came since, until every attempt is told; never a line per attempt.
    let deadline = Instant::now() + Duration::from_secs(60);
    let lines = loop {
        let lines = log_lines(&w, "127.0.0.1");
        let told = lines.iter().fold((0, 0), |(a, b), l| {
            let (x, y) = counts(l);
            (a + x, b + y)
        });
        if told == (wrong, throttled) {
            break lines;
        }
        assert!(
            Instant::now() < deadline,
            "told {told:?} of {:?}:\n{}",
            (wrong, throttled),
            w.log_text()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let elapsed = started.elapsed().as_secs();
    let bound = 2 + elapsed as usize / 10;
    assert!(
        lines.len() <= bound,
        "{} lines in {elapsed} s (at most {bound}):\n{}",
        lines.len(),
        lines.join("\n")
    );

    // Another source is not affected: its right token passes, its wrong one is checked.
    let mut other = from("127.0.0.2", admin).await;
    let r = attempt(&mut other, TOKEN).await;
    assert_eq!(r.status, PASSED, "{}", r.text());
    let r = attempt(&mut other, "guess").await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.text());
    tokio::task::block_in_place(|| {
        w.wait_log(
            0,
            "wrong bearer tokens from 127.0.0.2: 1 checked and wrong",
            SAYS,
        )
    });

    // Once the backoff has passed (as long as Retry-After says), the right token passes,
    // and clears the source: its next wrong token is checked again.
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let r = attempt(&mut attacker, TOKEN).await;
        if r.status == PASSED {
            break;
        }
        assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{}", r.text());
        throttled += 1;
        assert!(Instant::now() < deadline, "still refused: {}", r.text());
        let after: u64 = r.header("retry-after").unwrap().parse().unwrap();
        tokio::time::sleep(Duration::from_secs(after)).await;
    }
    let r = attempt(&mut attacker, "guess-again").await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.text());

    // The metric counts every failed attempt, by reason (127.0.0.2's and the last one too).
    let m = attacker.get("/metrics").await.unwrap().text();
    assert_eq!(
        metric(&m, "weir_admin_auth_failures_total{reason=\"wrong_token\"}"),
        wrong + 2
    );
    assert_eq!(
        metric(&m, "weir_admin_auth_failures_total{reason=\"throttled\"}"),
        throttled
    );
}

const SAYS: Duration = Duration::from_secs(30);

/// The log lines about wrong tokens from `source`.
fn log_lines(w: &Weir, source: &str) -> Vec<String> {
    let needle = format!("wrong bearer tokens from {source}: ");
    w.log_text()
        .lines()
        .filter(|l| l.contains(&needle))
        .map(str::to_owned)
        .collect()
}

/// (wrong tokens, attempts refused unchecked) a log line tells of:
/// `...from SOURCE: N checked and wrong, M attempts refused unchecked...`.
fn counts(line: &str) -> (u64, u64) {
    let after = line.split("wrong bearer tokens from ").nth(1).unwrap();
    let after = after.split_once(": ").unwrap().1;
    let (n, rest) = after.split_once(" checked and wrong, ").unwrap();
    let m = rest.split(' ').next().unwrap();
    (n.parse().unwrap(), m.parse().unwrap())
}
