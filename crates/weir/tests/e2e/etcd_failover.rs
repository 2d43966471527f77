//! Replicas against an etcd member that dies or hangs, through the real binary and real
//! etcd 3.4: with three members and one lost, every replica uses the two left (writes,
//! heartbeats and its watch go on, leases are kept, `/healthz` says the store is fine);
//! with etcd hung (SIGSTOP: connections stay open, nothing answers), a write answers 503
//! `store-unreachable` within `--store-timeout`, never after etcd's own timeouts.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use weir_testkit::etcd::Etcd;
use weir_testkit::{client, HttpUpstream};

use crate::api_client::{add, call, get, json};
use crate::common::Weir;
use crate::etcd::{bound, put_pool, start_with, until, until_served, PREFIX};

/// A request to a replica that gets no answer in this long fails the test (a hang).
const ANSWERED: Duration = Duration::from_secs(60);

/// A replica with `extra` arguments, its cache in `dir`, once its admin listener is up.
fn replica(etcd: &Etcd, dir: &Path, name: &str, extra: &[&str]) -> Weir {
    let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    let mut w = start_with(etcd, &dir.join(format!("cache-{name}.json")), &extra);
    let admin = w.admin;
    w.wait_listening(admin);
    w
}

/// `METHOD /api/v1/PATH` that must be answered within [`ANSWERED`]: status and body.
async fn answered(
    admin: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<serde_json::Value>,
) -> (u16, String) {
    let r = tokio::time::timeout(ANSWERED, call(admin, method, path, headers, body))
        .await
        .unwrap_or_else(|_| panic!("{method} {path} on {admin}: no answer in {ANSWERED:?}"));
    (r.status.as_u16(), r.text())
}

async fn healthz(admin: SocketAddr) -> String {
    tokio::time::timeout(ANSWERED, client::get(admin, "/healthz"))
        .await
        .expect("/healthz answered")
        .expect("/healthz")
        .text()
}

/// How one member of three is lost.
#[derive(Debug, Clone, Copy)]
enum Loss {
    /// SIGKILL: its port refuses connections.
    Killed,
    /// SIGSTOP: connections to it stay open and get no answer.
    Hung,
}

/// Two replicas, a registration with a lease, then one etcd member (not the leader: this
/// is about the client, not about an election) lost under a steady load of writes and
/// heartbeats through both replicas. After `window`, nothing may fail: every write is
/// committed, every heartbeat renews, every replica's /healthz says the store is fine; and
/// the registration was never lost.
async fn one_member_of_three_lost(loss: Loss, extra: &[&str], window: Duration) {
    let mut etcd = Etcd::start(3);
    let up = HttpUpstream::spawn("app").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (
        replica(&etcd, dir.path(), "a", extra),
        replica(&etcd, dir.path(), "b", extra),
    );
    add(a.admin, "pools/app", json!({})).await;
    add(
        a.admin,
        "listeners/web",
        json!({"bind": "127.0.0.1:0", "pool": "app"}),
    )
    .await;
    let leased = format!("pools/app/endpoints/{}", up.addr());
    let r = call(a.admin, "PUT", &leased, &[], Some(json!({"ttl": "5s"}))).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let listeners = [bound(&a, 0), bound(&b, 0)];
    for l in listeners {
        until_served(l, 200).await;
    }
    let admins = [a.admin, b.admin];
    for admin in admins {
        until(admin, &leased, |s, _| s == 200).await;
    }

    let leader = tokio::task::block_in_place(|| etcd.leader());
    let victim = (leader + 1) % 3;
    let lost = Instant::now();
    tokio::task::block_in_place(|| match loss {
        Loss::Killed => etcd.kill(victim),
        Loss::Hung => etcd.stop(victim),
    });

    // Writes, heartbeats and /healthz through both replicas in turn, for the window and
    // then at least as long again (and at least 20 writes after it).
    let beat = format!("{leased}/heartbeat");
    let (mut failed, mut after) = (Vec::new(), 0);
    let mut i = 0;
    while lost.elapsed() < 2 * window || after < 20 {
        i += 1;
        let admin = admins[i % 2];
        let path = format!("pools/w{i}");
        let started = lost.elapsed();
        let (status, text) = answered(
            admin,
            "PUT",
            &path,
            &[("if-none-match", "*")],
            Some(json!({})),
        )
        .await;
        let counts = started >= window;
        after += counts as usize;
        if counts && status != 201 {
            failed.push(format!(
                "{started:?}: PUT {path} on {admin}: {status} {text}"
            ));
        }
        let (status, text) = answered(admins[(i + 1) % 2], "POST", &beat, &[], None).await;
        if status != 200 && (counts || status == 404) {
            // A 404 means the lease ended: lost however early.
            failed.push(format!("{started:?}: heartbeat: {status} {text}"));
        }
        let health = healthz(admin).await;
        if counts && health != "ok\n" {
            failed.push(format!("{started:?}: /healthz on {admin}: {health}"));
        }
        assert!(
            lost.elapsed() < window * 2 + Duration::from_secs(120),
            "the load takes too long: {after} writes after the window; {failed:#?}"
        );
    }
    assert!(
        failed.is_empty(),
        "{loss:?} member {victim} of 3 (leader {leader}): {} failures after the {window:?} \
         window ({after} writes then):\n{}\nlog of A:\n{}\nlog of B:\n{}",
        failed.len(),
        failed.join("\n"),
        a.log_text(),
        b.log_text()
    );
    // Everything written is on both replicas, and the registration is still there.
    let last = format!("pools/w{i}");
    for admin in admins {
        until(admin, &last, |s, _| s == 200).await;
        assert_eq!(get(admin, &leased).await.status, 200);
    }
    let key = format!("{PREFIX}/endpoint/app/{}", up.addr());
    assert!(tokio::task::block_in_place(|| etcd.get(&key)).is_some());
    for l in listeners {
        until_served(l, 200).await;
    }
    // The replicas used the lost member too, and say they stopped.
    let said = format!("etcd member {} failed", etcd.endpoints()[victim]);
    let line = [&a, &b]
        .iter()
        .find_map(|w| {
            w.log_text()
                .lines()
                .find(|l| l.contains(&said))
                .map(str::to_string)
        })
        .unwrap_or_else(|| panic!("no replica says {said:?}"));
    println!(
        "{loss:?} member {victim} of 3: {after} writes after the {window:?} window, none failed; {line}"
    );
    // Whether a commit's transaction went to the lost member depends on timing: shown when.
    for w in [&a, &b] {
        for l in w
            .log_text()
            .lines()
            .filter(|l| l.contains("a commit's answer was lost"))
        {
            println!("{l}");
        }
    }
    if let Loss::Hung = loss {
        tokio::task::block_in_place(|| etcd.cont(victim));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_etcd_member_of_three_costs_no_write_heartbeat_or_health() {
    one_member_of_three_lost(Loss::Killed, &[], Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_etcd_member_of_three_costs_no_write_heartbeat_or_health() {
    // The watch of a replica on the hung member notices within two store timeouts.
    one_member_of_three_lost(
        Loss::Hung,
        &["--store-timeout", "2s"],
        Duration::from_secs(8),
    )
    .await;
}

/// etcd hung: a write and a heartbeat answer 503 `store-unreachable` within the store
/// timeout (here 2 s), the replica says so, traffic and reads go on; once etcd answers
/// again, so do writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_etcd_answers_writes_503_within_the_store_timeout() {
    let mut etcd = Etcd::start(1);
    let up = HttpUpstream::spawn("app").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let timeout = Duration::from_secs(2);
    let a = replica(&etcd, dir.path(), "a", &["--store-timeout", "2s"]);
    add(a.admin, "pools/app", json!({})).await;
    add(
        a.admin,
        "listeners/web",
        json!({"bind": "127.0.0.1:0", "pool": "app"}),
    )
    .await;
    let leased = format!("pools/app/endpoints/{}", up.addr());
    let r = call(a.admin, "PUT", &leased, &[], Some(json!({"ttl": "60s"}))).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let on_a = bound(&a, 0);
    until_served(on_a, 200).await;

    tokio::task::block_in_place(|| etcd.stop(0));
    // Not a tight bound: the point is seconds, not the 20 s etcd's client and the probes
    // of every member took.
    let within = timeout + Duration::from_secs(4);
    for (method, path, headers, body) in [
        (
            "PUT",
            "pools/more".to_string(),
            vec![("if-none-match", "*")],
            Some(json!({})),
        ),
        ("POST", format!("{leased}/heartbeat"), vec![], None),
        (
            "PUT",
            "pools/other".to_string(),
            vec![("if-none-match", "*")],
            Some(json!({})),
        ),
    ] {
        let t0 = Instant::now();
        let r = tokio::time::timeout(ANSWERED, call(a.admin, method, &path, &headers, body))
            .await
            .expect("answered");
        let took = t0.elapsed();
        assert_eq!(r.status, 503, "{method} {path}: {}", r.text());
        let p = json(&r);
        assert!(
            p["type"].as_str().unwrap().ends_with("store-unreachable"),
            "{p}"
        );
        assert!(
            took < within,
            "{method} {path} answered after {took:?}, not within {within:?}: {p}"
        );
        assert!(p["detail"].as_str().unwrap().contains("2s"), "{p}");
        println!(
            "{method} {path}: {} after {took:?}: {}",
            r.status, p["detail"]
        );
    }
    // Traffic and reads go on; the watch notices too, so the replica says so.
    until_served(on_a, 200).await;
    until(a.admin, "pools/app", |s, _| s == 200).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !healthz(a.admin).await.contains("config store unreachable") {
        assert!(Instant::now() < deadline, "{}", healthz(a.admin).await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = get(a.admin, "pools/app").await;
    assert_eq!(r.header("x-weir-stale"), Some("store-unreachable"));

    tokio::task::block_in_place(|| etcd.cont(0));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = put_pool(a.admin, "more").await;
        if r.status == 201 {
            break;
        }
        assert!(Instant::now() < deadline, "{} {}", r.status, r.text());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, text) = answered(a.admin, "POST", &format!("{leased}/heartbeat"), &[], None).await;
    assert_eq!(status, 200, "{text}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while healthz(a.admin).await != "ok\n" {
        assert!(Instant::now() < deadline, "{}", healthz(a.admin).await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `--store-timeout` takes a duration above zero; anything else ends weir with an error
/// naming the option.
#[test]
fn a_bad_store_timeout_is_refused_naming_the_option() {
    for bad in ["nope", "0s", "5"] {
        let mut w = Weir::command(
            &[
                "run",
                "--store",
                "etcd://127.0.0.1:1/weir",
                "--store-timeout",
                bad,
            ],
            &[],
        );
        let status = w.wait_exit(Duration::from_secs(20));
        assert!(!status.success(), "{bad}: {status}");
        let log = w.log_text();
        assert!(
            log.contains("--store-timeout") && log.contains(bad),
            "{bad}: {log}"
        );
    }
}
