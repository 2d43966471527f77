//! Replicas against an etcd that wants TLS, client certificates or a password
//! (`--store-ca`, `--store-cert`/`--store-key`, `--store-user-file`), through the real
//! binary and a real etcd 3.4: given what etcd wants, replicas share their config as
//! without; not given it, a replica serves no config it could not read, and its log names
//! the problem and the option that fixes it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use weir_testkit::certs::Ca;
use weir_testkit::etcd::Etcd;
use weir_testkit::HttpUpstream;

use crate::api_client::{add, call, get, version};
use crate::common::Weir;
use crate::etcd::{bound, put_pool, setup, start_with, until, until_served, PREFIX};

/// How long a replica that cannot read etcd may take to say why.
const SAYS: Duration = Duration::from_secs(20);

/// Starts `weir run --store ... EXTRA`, its cache in `dir`, without waiting for anything.
fn start(etcd: &Etcd, dir: &Path, name: &str, extra: &[String]) -> Weir {
    start_with(etcd, &dir.join(format!("cache-{name}.json")), extra)
}

/// A replica that read its config from etcd: its admin listener is up.
fn replica(etcd: &Etcd, dir: &Path, name: &str, extra: &[String]) -> Weir {
    let mut w = start(etcd, dir, name, extra);
    let admin = w.admin;
    w.wait_listening(admin);
    w
}

/// `--store-ca` and, with `client_cert`, `--store-cert`/`--store-key` for `etcd`.
fn tls_args(etcd: &Etcd, client_cert: bool) -> Vec<String> {
    let t = etcd.tls().expect("a TLS etcd");
    let mut args = vec!["--store-ca".to_string(), path(&t.ca)];
    if client_cert {
        args.extend([
            "--store-cert".to_string(),
            path(&t.client.cert),
            "--store-key".to_string(),
            path(&t.client.key),
        ]);
    }
    args
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// Writes `USER:PASSWORD` (and a second line, which weir ignores) to `dir/name`.
fn user_file(dir: &Path, name: &str, line: &str) -> PathBuf {
    let f = dir.join(name);
    std::fs::write(&f, format!("{line}\nignored\n")).unwrap();
    f
}

/// Two replicas started with `extra`: a config written through A is served by B, an
/// endpoint removed through B is gone from A.
async fn two_replicas_share_changes(etcd: &Etcd, extra: &[String]) -> (Weir, Weir) {
    let dir = tempfile::tempdir().unwrap();
    let up = HttpUpstream::spawn("app").await.unwrap();
    let a = replica(etcd, dir.path(), "a", extra);
    let b = replica(etcd, dir.path(), "b", extra);
    setup(a.admin, &up).await;
    let (on_a, on_b) = (bound(&a, 0), bound(&b, 0));
    until_served(on_a, 200).await;
    until_served(on_b, 200).await;

    let path = format!("pools/app/endpoints/{}", up.addr());
    until(b.admin, &path, |s, _| s == 200).await;
    let tag = format!("\"{}\"", version(&get(b.admin, &path).await));
    let r = call(b.admin, "DELETE", &path, &[("if-match", &tag)], None).await;
    assert_eq!(r.status, 204, "{}", r.text());
    until_served(on_a, 503).await;
    // What the replicas wrote is in etcd, under the prefix.
    let key = format!("{PREFIX}/pool/app");
    assert!(tokio::task::block_in_place(|| etcd.get(&key)).is_some());
    (a, b)
}

/// Waits for the "no config, waiting" line of a replica that cannot read etcd, checks it
/// names `what`, and that the replica serves nothing meanwhile (its admin listener, so
/// `/readyz`, opens only with a config).
fn waits_saying(w: &Weir, what: &[&str]) -> String {
    w.wait_log(0, "waiting for it, not ready", SAYS);
    // The reason comes from a probe that waits a bounded time for etcd's alert: on a loaded
    // machine one line may miss it, so any of the lines it repeats (every 5 s) may say it.
    let says =
        |l: &&str| l.contains("waiting for it, not ready") && what.iter().all(|n| l.contains(n));
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let line = loop {
        if let Some(l) = w.log_text().lines().find(says) {
            break l.to_string();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no waiting line with {what:?}:\n{}",
            w.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // Not etcd-client's Debug dump.
    assert!(!line.contains("tonic::transport"), "{line}");
    assert!(std::net::TcpStream::connect(w.admin).is_err(), "{line}");
    line
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tls_replicas_given_the_ca_share_changes() {
    let etcd = tokio::task::block_in_place(|| Etcd::builder(1).tls().start());
    assert!(etcd.client_urls()[0].starts_with("https://"));
    two_replicas_share_changes(&etcd, &tls_args(&etcd, false)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_client_certificates_replicas_given_one_share_changes() {
    let etcd = tokio::task::block_in_place(|| Etcd::builder(1).client_cert_auth().start());
    two_replicas_share_changes(&etcd, &tls_args(&etcd, true)).await;
}

/// No `--store-ca`: weir talks plain HTTP/2 to a TLS port, and the connection just breaks.
/// A CA that did not sign etcd's certificate: the handshake fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_etcd_without_its_ca_is_not_read_and_the_log_says_why() {
    let etcd = tokio::task::block_in_place(|| Etcd::builder(1).tls().start());
    let dir = tempfile::tempdir().unwrap();

    let plain = start(&etcd, dir.path(), "plain", &[]);
    let line = waits_saying(&plain, &["serves TLS", "give --store-ca"]);
    println!("without --store-ca: {line}");

    let other = Ca::new("not etcd's CA").write(dir.path(), "other-ca");
    let wrong = start(
        &etcd,
        dir.path(),
        "wrong",
        &["--store-ca".into(), path(&other)],
    );
    let line = waits_saying(
        &wrong,
        &["TLS handshake", "UnknownIssuer", "is --store-ca the CA"],
    );
    println!("another CA: {line}");
}

/// etcd with `--client-cert-auth`: no client certificate, or one its CA did not sign.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_etcd_that_wants_a_client_certificate_is_not_read_without_one() {
    let etcd = tokio::task::block_in_place(|| Etcd::builder(1).client_cert_auth().start());
    let dir = tempfile::tempdir().unwrap();

    let none = start(&etcd, dir.path(), "none", &tls_args(&etcd, false));
    let line = waits_saying(
        &none,
        &[
            "wants a client certificate",
            "give --store-cert and --store-key",
        ],
    );
    println!("no client certificate: {line}");

    let foreign = Ca::new("not etcd's CA")
        .leaf(&["weir"])
        .write(dir.path(), "foreign");
    let mut args = tls_args(&etcd, false);
    args.extend([
        "--store-cert".into(),
        path(&foreign.cert),
        "--store-key".into(),
        path(&foreign.key),
    ]);
    let refused = start(&etcd, dir.path(), "foreign", &args);
    let line = waits_saying(
        &refused,
        &[
            "refused the client certificate",
            "foreign.pem",
            "--trusted-ca-file",
        ],
    );
    println!("a client certificate of another CA: {line}");
}

/// etcd with authentication on, over TLS: a user allowed the prefix works through every
/// replica, and keeps working once etcd has dropped its token (`--auth-token-ttl 1`: a
/// token unused for a second is gone, as one unused for 5 minutes is by default).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_user_file_replicas_share_changes_and_log_in_again() {
    let mut etcd = tokio::task::block_in_place(|| Etcd::builder(1).tls().auth_token_ttl(1).start());
    tokio::task::block_in_place(|| {
        etcd.enable_auth("root-secret");
        etcd.add_user("weir", "weir-secret", &format!("{PREFIX}/"));
    });
    let dir = tempfile::tempdir().unwrap();
    let mut extra = tls_args(&etcd, false);
    let file = user_file(dir.path(), "etcd-user", "weir:weir-secret");
    extra.extend(["--store-user-file".into(), path(&file)]);
    let (a, b) = two_replicas_share_changes(&etcd, &extra).await;

    // Idle for longer than the token lives (a lower bound: a slow machine only makes the
    // token older). Then a change through each replica still commits.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let r = put_pool(b.admin, "later").await;
    assert_eq!(r.status, 201, "{}", r.text());
    until(a.admin, "pools/later", |s, _| s == 200).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let tag = format!("\"{}\"", version(&get(a.admin, "pools/later").await));
    let r = call(
        a.admin,
        "DELETE",
        "pools/later",
        &[("if-match", &tag)],
        None,
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    until(b.admin, "pools/later", |s, _| s == 404).await;
}

/// A wrong password is no reason to wait: weir ends, naming the user and the file. No
/// user at all: it waits, saying etcd wants one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_ends_weir_and_no_user_is_named_as_the_problem() {
    let mut etcd = tokio::task::block_in_place(|| Etcd::start(1));
    tokio::task::block_in_place(|| {
        etcd.enable_auth("root-secret");
        etcd.add_user("weir", "weir-secret", &format!("{PREFIX}/"));
    });
    let dir = tempfile::tempdir().unwrap();

    let file = user_file(dir.path(), "etcd-user", "weir:not-the-password");
    let mut wrong = start(
        &etcd,
        dir.path(),
        "wrong",
        &["--store-user-file".into(), path(&file)],
    );
    let status = tokio::task::block_in_place(|| wrong.wait_exit(SAYS));
    assert!(!status.success());
    let log = wrong.log_text();
    let line = log
        .lines()
        .find(|l| l.contains("ERROR"))
        .unwrap_or_else(|| panic!("no error logged:\n{log}"));
    for needle in [
        "refused user `weir`",
        &format!("--store-user-file {}", file.display()),
        "authentication failed",
    ] {
        assert!(line.contains(needle), "{needle:?} not in {line}");
    }
    println!("a wrong password: {line}");

    let anonymous = start(&etcd, dir.path(), "anonymous", &[]);
    let line = waits_saying(&anonymous, &["authentication on", "give --store-user-file"]);
    println!("no user: {line}");
}

/// The user file is read before anything else: without `USER:PASSWORD` on its first line
/// weir does not start, and says which file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_file_without_a_colon_is_refused_at_startup() {
    let dir = tempfile::tempdir().unwrap();
    let file = user_file(dir.path(), "etcd-user", "weir-secret");
    // Nothing needs to listen there: weir never gets to connect.
    let port = crate::common::free_port();
    let url = format!("etcd://127.0.0.1:{port}{PREFIX}");
    let cache = path(&dir.path().join("cache.json"));
    let mut w = Weir::command(
        &[
            "run",
            "--store",
            &url,
            "--store-user-file",
            &path(&file),
            "--store-cache",
            &cache,
        ],
        &[],
    );
    let status = tokio::task::block_in_place(|| w.wait_exit(SAYS));
    assert!(!status.success());
    let want = format!(
        "--store-user-file {}: expected USER:PASSWORD on its first line",
        file.display()
    );
    assert!(w.log_text().contains(&want), "{}", w.log_text());
}

/// With a user file, etcd away at startup is waited out as without one (etcd-client would
/// log in inside `connect`, and fail there): the replica waits, not ready, then reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_user_file_a_replica_started_while_etcd_is_away_waits_for_it() {
    let mut etcd = tokio::task::block_in_place(|| Etcd::start(1));
    tokio::task::block_in_place(|| {
        etcd.enable_auth("root-secret");
        etcd.add_user("weir", "weir-secret", &format!("{PREFIX}/"));
        etcd.put(&format!("{PREFIX}/pool/app"), "{}");
        etcd.kill(0);
    });
    let dir = tempfile::tempdir().unwrap();
    let file = user_file(dir.path(), "etcd-user", "weir:weir-secret");
    let mut w = start(
        &etcd,
        dir.path(),
        "a",
        &["--store-user-file".into(), path(&file)],
    );
    let line = waits_saying(&w, &["Connection refused"]);
    println!("etcd away: {line}");

    tokio::task::block_in_place(|| etcd.restart(0));
    let admin = w.admin;
    tokio::task::block_in_place(|| w.wait_listening(admin));
    until(w.admin, "pools/app", |s, _| s == 200).await;
    let r = put_pool(w.admin, "more").await;
    assert_eq!(r.status, 201, "{}", r.text());
    add(w.admin, "pools/third", json!({})).await;
}
