//! `basic_auth` filters through the real binary: users files made by Debian's `htpasswd`
//! (bcrypt) and the argon2 crate, right / wrong / missing credentials, the user passed
//! upstream (and a forged value removed), the access log's `user`, the file watched (a new
//! file picked up, a bad one keeping the old users), refused schemes at `weir check`, a flood
//! of new credentials refused beyond what may wait.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use base64::Engine as _;
use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use serde_json::Value;
use weir_testkit::client::{self, Resp};
use weir_testkit::HttpUpstream;

use crate::common::{free_addr, Weir, WEIR};

/// `htpasswd -B -C 5 -b [-c] FILE user pass` (cost 5 keeps the tests quick).
pub fn htpasswd(file: &Path, user: &str, pass: &str, create: bool) {
    htpasswd_cost(file, user, pass, create, 5);
}

/// `htpasswd -B -C COST -b [-c] FILE user pass`.
fn htpasswd_cost(file: &Path, user: &str, pass: &str, create: bool, cost: u32) {
    let mut cmd = Command::new("htpasswd");
    cmd.args(["-B", "-C", &cost.to_string(), "-b"]);
    if create {
        cmd.arg("-c");
    }
    let out = cmd
        .arg(file)
        .args([user, pass])
        .output()
        .expect("htpasswd (Debian's apache2-utils) is installed");
    assert!(out.status.success(), "{out:?}");
}

/// An argon2id PHC string for `pass`.
pub fn argon2_hash(pass: &str) -> String {
    use argon2::password_hash::{PasswordHasher, SaltString};
    let salt = SaltString::encode_b64(b"weir-e2e-salt-16").unwrap();
    argon2::Argon2::default()
        .hash_password(pass.as_bytes(), &salt)
        .unwrap()
        .to_string()
}

pub fn basic(user: &str, pass: &str) -> String {
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
    format!("Basic {token}")
}

async fn get(listen: std::net::SocketAddr, path: &str, headers: &[(&str, &str)]) -> Resp {
    let mut req = Request::get(path);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    client::send(listen, req.body(Full::new(Bytes::new())).unwrap())
        .await
        .unwrap()
}

/// The request headers the upstream's `/headers` saw: (name, value) pairs.
fn seen(r: &Resp) -> Vec<(String, String)> {
    let v: Value = serde_json::from_str(&r.text()).unwrap();
    v["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p[0].as_str().unwrap().to_string(),
                p[1].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn values(r: &Resp, name: &str) -> Vec<String> {
    seen(r)
        .into_iter()
        .filter(|(n, _)| n == name)
        .map(|(_, v)| v)
        .collect()
}

fn config(listen: std::net::SocketAddr, up: &HttpUpstream, users: &Path, log: &Path) -> String {
    format!(
        r#"
[listeners.web]
bind = "{listen}"
access_log = "{}"

[routes.staff]
listener = "web"
pool = "app"
filters = ["staff"]

[pools.app]
endpoints = [{{ addr = "{}" }}]

[filters.staff]
kind = "basic_auth"
users_file = "{}"
realm = "Staff only"
user_header = "X-Auth-User"
"#,
        log.display(),
        up.addr(),
        users.display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_are_checked_and_the_user_passed_on() {
    let up = HttpUpstream::spawn("app").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let users = dir.path().join("htpasswd");
    htpasswd(&users, "alice", "alice-pw", true);
    htpasswd(&users, "bob", "bob pw: with colon", false);
    let mut text = std::fs::read_to_string(&users).unwrap();
    text.push_str(&format!("# argon2\ncarol:{}\n", argon2_hash("carol-pw")));
    std::fs::write(&users, text).unwrap();
    let log = dir.path().join("access.log");
    let listen = free_addr();
    let w = Weir::start(&config(listen, &up, &users, &log), &[listen]);

    // Missing, wrong, unknown, malformed, twice (which one would count?): 401 with the
    // challenge, nothing upstream.
    let wrong = basic("alice", "nope");
    let unknown = basic("mallory", "alice-pw");
    let right = basic("alice", "alice-pw");
    let denied: [&[(&str, &str)]; 6] = [
        &[],
        &[("authorization", &wrong)],
        &[("authorization", &unknown)],
        &[("authorization", "Basic !!!not-base64")],
        &[("authorization", "Bearer alice-pw")],
        &[("authorization", &right), ("authorization", &right)],
    ];
    for h in denied {
        let r = get(listen, "/headers", h).await;
        assert_eq!(r.status, 401, "{h:?}");
        assert_eq!(
            r.header("www-authenticate"),
            Some("Basic realm=\"Staff only\", charset=\"UTF-8\""),
            "{h:?}"
        );
        assert_eq!(r.header("x-weir-reason"), Some("unauthorized"));
    }
    assert_eq!(up.requests(), 0);

    // bcrypt from htpasswd (twice: the second from the cache), a password with a colon,
    // argon2; the user goes upstream, the password and any forged user do not.
    let alice = basic("alice", "alice-pw");
    let bob = basic("bob", "bob pw: with colon");
    let carol = basic("carol", "carol-pw");
    for (user, auth) in [
        ("alice", &alice),
        ("alice", &alice),
        ("bob", &bob),
        ("carol", &carol),
    ] {
        let r = get(
            listen,
            "/headers",
            &[("authorization", auth), ("x-auth-user", "root")],
        )
        .await;
        assert_eq!(r.status, 200, "{user}: {}", r.text());
        assert_eq!(values(&r, "x-auth-user"), [user]);
        assert!(values(&r, "authorization").is_empty(), "{:?}", seen(&r));
    }
    // The right user with the wrong password is not let in by the cache.
    assert_eq!(
        get(listen, "/", &[("authorization", &wrong)]).await.status,
        401
    );

    let entries = crate::common::access_log(&log, 11);
    assert_eq!(entries.len(), 11, "{entries:#?}");
    for e in &entries[..6] {
        assert_eq!(e["status"], 401, "{e}");
        assert_eq!(e["reason"], "unauthorized", "{e}");
        assert!(e.get("user").is_none(), "{e}");
    }
    let users: Vec<_> = entries[6..10].iter().map(|e| e["user"].clone()).collect();
    assert_eq!(users, ["alice", "alice", "bob", "carol"]);
    assert_eq!(entries[10]["reason"], "unauthorized");

    let text = client::get(w.admin, "/metrics").await.unwrap().text();
    assert!(
        text.lines().any(|l| l.starts_with("weir_requests_total{")
            && l.contains("route=\"staff\"")
            && l.contains("code=\"401\"")
            && l.contains("reason=\"unauthorized\"")
            && l.ends_with(" 7")),
        "no count of the 401s:\n{text}"
    );
}

/// Clients that send the same new credentials at once (a browser's parallel requests, a
/// pool of connections starting) wait for one verification: bcrypt is paid once, not once
/// per request in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_with_new_credentials_share_one_verification() {
    let up = HttpUpstream::spawn("app").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let users = dir.path().join("htpasswd");
    // Cost 12: a verification long enough that the requests below arrive during it.
    htpasswd_cost(&users, "alice", "alice-pw", true, 12);
    let log = dir.path().join("access.log");
    let listen = free_addr();
    let w = Weir::start(&config(listen, &up, &users, &log), &[listen]);
    let alice = basic("alice", "alice-pw");
    let all: Vec<_> = (0..12)
        .map(|_| {
            let alice = alice.clone();
            tokio::spawn(async move { get(listen, "/", &[("authorization", &alice)]).await.status })
        })
        .collect();
    for r in all {
        assert_eq!(r.await.unwrap(), 200);
    }
    let wrong = basic("alice", "nope");
    assert_eq!(
        get(listen, "/", &[("authorization", &wrong)]).await.status,
        401
    );
    w.wait_log(
        0,
        "password of \"alice\" refused (bcrypt)",
        Duration::from_secs(20),
    );
    let accepted = w
        .log_text()
        .lines()
        .filter(|l| l.contains("password of \"alice\" accepted (bcrypt)"))
        .count();
    assert_eq!(accepted, 1, "{}", w.log_text());
}

/// A flood of new credentials (a password-guessing run) waits for the checks only so far:
/// past 32 waiting per CPU, new credentials are answered 503 `auth_unavailable` without a
/// check, and a remembered user still gets in while the flood waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_new_credentials_waits_only_so_far_and_remembered_users_get_in() {
    let up = HttpUpstream::spawn("app").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let users = dir.path().join("htpasswd");
    // Cost 13: each check takes long enough that the flood, 1.5 times what may wait, has
    // arrived well before the checks under way could make room for it.
    htpasswd_cost(&users, "alice", "alice-pw", true, 13);
    let log = dir.path().join("access.log");
    let listen = free_addr();
    let w = Weir::start(&config(listen, &up, &users, &log), &[listen]);
    let alice = basic("alice", "alice-pw");
    assert_eq!(
        get(listen, "/", &[("authorization", &alice)]).await.status,
        200
    );

    // What weir allows: 32 per CPU it may use, counted the same way.
    let may_wait = 32 * std::thread::available_parallelism().map_or(2, |n| n.get());
    let excess = may_wait / 2;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let flood: Vec<_> = (0..may_wait + excess)
        .map(|i| {
            let (tx, guess) = (tx.clone(), basic("alice", &format!("guess-{i}")));
            tokio::spawn(async move {
                let r = get(listen, "/", &[("authorization", &guess)]).await;
                let reason = r.headers.get("x-weir-reason").cloned();
                let _ = tx.send((r.status, reason));
            })
        })
        .collect();
    let mut refused = 0;
    while refused == 0 {
        let (status, reason) = tokio::time::timeout(Duration::from_secs(120), rx.recv())
            .await
            .expect("past what may wait, new credentials are answered without a check")
            .unwrap();
        // A check may finish meanwhile (401, a wrong guess); nothing else comes back.
        match status.as_u16() {
            503 => {
                assert_eq!(reason.unwrap(), "auth_unavailable");
                refused += 1;
            }
            401 => {}
            other => panic!("a guess got {other}"),
        }
    }
    // The flood is still waiting for its checks; a remembered user is not.
    let during = get(listen, "/", &[("authorization", &alice)]).await;
    assert_eq!(during.status, 200);
    for t in flood {
        t.abort();
    }
    drop(w);
}

/// Polls until `auth` gets `want` (the file is looked at once a second).
async fn until_status(listen: std::net::SocketAddr, auth: &str, want: u16) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let got = get(listen, "/", &[("authorization", auth)]).await.status;
        if got == want {
            return;
        }
        assert!(Instant::now() < deadline, "still {got}, not {want}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_users_file_is_picked_up_and_a_bad_one_ignored() {
    let up = HttpUpstream::spawn("app").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let users = dir.path().join("htpasswd");
    htpasswd(&users, "alice", "alice-pw", true);
    let log = dir.path().join("access.log");
    let listen = free_addr();
    let w = Weir::start(&config(listen, &up, &users, &log), &[listen]);
    let alice = basic("alice", "alice-pw");
    let bob = basic("bob", "bob-pw");
    // alice's success is remembered; the new file must make weir forget it.
    assert_eq!(
        get(listen, "/", &[("authorization", &alice)]).await.status,
        200
    );
    assert_eq!(
        get(listen, "/", &[("authorization", &bob)]).await.status,
        401
    );

    // A new file, renamed over the old one as deploy tools do: bob only.
    let next = dir.path().join("htpasswd.new");
    htpasswd(&next, "bob", "bob-pw", true);
    std::fs::rename(&next, &users).unwrap();
    until_status(listen, &bob, 200).await;
    assert_eq!(
        get(listen, "/", &[("authorization", &alice)]).await.status,
        401
    );
    w.wait_log(0, "users file reloaded", Duration::from_secs(5));

    // A file that does not read keeps bob.
    let from = w.log_lines();
    std::fs::write(
        &next,
        "bob:$apr1$EkIcIL0v$TkhRQRPfzGFVG8B.KHOES0\ncarol:plain\n",
    )
    .unwrap();
    std::fs::rename(&next, &users).unwrap();
    let line = w.wait_log(from, "users file not reloaded", Duration::from_secs(15));
    assert!(line.contains("line 1, user `bob`"), "{line}");
    assert!(line.contains("line 2, user `carol`"), "{line}");
    assert_eq!(
        get(listen, "/", &[("authorization", &bob)]).await.status,
        200
    );
}

#[test]
fn check_refuses_weak_hashes_with_their_lines() {
    let dir = tempfile::tempdir().unwrap();
    let users = dir.path().join("htpasswd");
    htpasswd(&users, "alice", "alice-pw", true);
    // What htpasswd writes with -m (Apache MD5) and -s ({SHA}).
    for (flag, user) in [("-m", "mike"), ("-s", "sam")] {
        let out = Command::new("htpasswd")
            .args([flag, "-b"])
            .arg(&users)
            .args([user, "pw"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
    let cfg = format!(
        "[listeners.web]\nbind = \"127.0.0.1:8080\"\npool = \"app\"\n\n[pools.app]\nendpoints = [{{ addr = \"127.0.0.1:9001\" }}]\n\n[filters.staff]\nkind = \"basic_auth\"\nusers_file = \"{}\"\n",
        users.display()
    );
    let path = dir.path().join("weir.toml");
    std::fs::write(&path, cfg).unwrap();
    let out = Command::new(WEIR).arg("check").arg(&path).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let at = format!("{}:10:14: error:", path.display());
    assert!(err.contains(&at), "no {at:?} in:\n{err}");
    assert!(
        err.contains("line 2, user `mike`: Apache MD5 (`$apr1$`) hashes are refused"),
        "{err}"
    );
    assert!(
        err.contains("line 3, user `sam`: `{SHA}` hashes are refused"),
        "{err}"
    );
    assert!(!err.contains("alice"), "{err}");
}

/// basic_auth in the middle of a chain: a filter that must wait (new credentials, verified
/// off the runtime) and one that need not (remembered ones) both hand the request on to the
/// filters after it, request and response phases alike; a refusal ends the chain there, and
/// only the filters before it see the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_filters_after_a_waiting_check_still_run() {
    let up = HttpUpstream::spawn("app").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let users = dir.path().join("htpasswd");
    htpasswd(&users, "alice", "alice-pw", true);
    let listen = free_addr();
    let config = format!(
        r#"
[listeners.web]
bind = "{listen}"

[routes.staff]
listener = "web"
pool = "app"
filters = ["before", "staff", "after"]

[pools.app]
endpoints = [{{ addr = "{}" }}]

[filters.before]
kind = "headers"
response_set = {{ "X-Before" = "1" }}

[filters.staff]
kind = "basic_auth"
users_file = "{}"

[filters.after]
kind = "headers"
request_set = {{ "X-After" = "2" }}
response_set = {{ "X-After-Answer" = "3" }}
"#,
        up.addr(),
        users.display()
    );
    let _w = Weir::start(&config, &[listen]);
    let alice = basic("alice", "alice-pw");
    // New credentials (the check waits for bcrypt), then remembered ones (it does not).
    for round in ["new", "remembered"] {
        let r = get(listen, "/headers", &[("authorization", &alice)]).await;
        assert_eq!(r.status, 200, "{round}: {}", r.text());
        assert_eq!(values(&r, "x-after"), ["2"], "{round}: {:?}", seen(&r));
        assert_eq!(r.header("x-before"), Some("1"), "{round}");
        assert_eq!(r.header("x-after-answer"), Some("3"), "{round}");
    }
    let wrong = basic("alice", "nope");
    let r = get(listen, "/headers", &[("authorization", &wrong)]).await;
    assert_eq!(r.status, 401);
    assert_eq!(r.header("x-before"), Some("1"));
    assert_eq!(r.header("x-after-answer"), None);
    assert_eq!(up.requests(), 2);
}
