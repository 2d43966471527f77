//! Durability across `kill -9`, and exclusive opening. The test binary re-invokes itself as
//! the child process: `child_process` does nothing unless CHILD_ENV is set.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use common::*;
use serde_json::json;
use weir_store::{Kind, Precondition::*, Store, StoreError};

const CHILD_ENV: &str = "WEIR_STORE_TEST_CHILD";
const DIR_ENV: &str = "WEIR_STORE_TEST_DIR";
/// Marks the child's own lines among the test harness's output.
const MARK: &str = "weir-store-child:";

/// Kills the child on drop, so a failing assertion never leaves it running.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill(); // SIGKILL on Unix
        let _ = self.0.wait();
    }
}

fn spawn(mode: &str, dir: &Path) -> (Killed, impl Iterator<Item = String>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, mode)
        .env(DIR_ENV, dir)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out: ChildStdout = child.stdout.take().unwrap();
    let lines = BufReader::new(out)
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| Some(l.split_once(MARK)?.1.trim().to_owned()));
    (Killed(child), lines)
}

fn say(line: &str) {
    // Straight to fd 1, past the harness's output capture, flushed before going on.
    let mut out = std::io::stdout().lock();
    writeln!(out, "{MARK} {line}").unwrap();
    out.flush().unwrap();
}

/// The child side. "commit": keeps updating pool "n" so that body.n == its version ==
/// the revision, announcing each commit once `commit` has returned, until it is killed.
/// "hold": opens the store and waits.
#[test]
fn child_process() {
    let Ok(mode) = std::env::var(CHILD_ENV) else {
        return;
    };
    let store = Store::open(Path::new(&std::env::var(DIR_ENV).unwrap())).unwrap();
    if mode == "commit" {
        loop {
            let cur = store.get(Kind::Pool, "n").unwrap();
            let pre = cur.map_or(Absent, |v| Version(v.version));
            let next = store.revision().unwrap() + 1;
            let c = store
                .commit(put(Kind::Pool, "n", json!({ "n": next }), pre), any)
                .unwrap();
            say(&format!("committed {}", c.revision));
        }
    }
    say("opened");
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}

#[test]
fn a_commit_survives_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    // Several rounds: each child also recovers the file the previous one was killed over,
    // most likely in the middle of its next commit.
    for round in 0..3 {
        let (child, mut lines) = spawn("commit", dir.path());
        let line = lines.next().expect("the child exited without committing");
        drop(child); // SIGKILL right after reading the acknowledgement
        let acked: u64 = line.strip_prefix("committed ").unwrap().parse().unwrap();

        let store = Store::open(dir.path()).unwrap();
        let state = store.state().unwrap();
        let n = state
            .get(Kind::Pool, "n")
            .expect("acknowledged change lost");
        assert!(
            state.revision >= acked,
            "round {round}: acked {acked}, found {}",
            state.revision
        );
        // Whole transactions or nothing: body, version and revision were written together.
        assert_eq!(n.version, state.revision);
        assert_eq!(n.body["n"], state.revision);
    }
}

#[test]
fn second_open_in_this_process_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let first = Store::open(dir.path()).unwrap();
    let err = Store::open(dir.path()).expect_err("second open must fail");
    assert!(matches!(err, StoreError::AlreadyOpen { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("already open") && msg.contains("weir.redb"),
        "{msg}"
    );
    drop(first);
    Store::open(dir.path()).expect("the lock goes with the store");
}

#[test]
fn second_open_from_another_process_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let (child, mut lines) = spawn("hold", dir.path());
    assert_eq!(lines.next().as_deref(), Some("opened"));
    let err = Store::open(dir.path()).expect_err("second open must fail");
    assert!(matches!(err, StoreError::AlreadyOpen { .. }), "{err:?}");
    drop(child);
    // The kernel drops the lock with the killed process.
    Store::open(dir.path()).expect("open after the holder died");
}
