//! Real etcd clusters for tests: `/usr/bin/etcd` (3.4) processes on loopback, each member
//! in its own temporary directory, torn down on drop. No mock: weir's store has to cope
//! with what a real etcd does (elections, compaction, members dying).
//!
//! Everything here blocks (child processes, polling): call it from a plain `#[test]`, or
//! from `spawn_blocking` in an async one.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use tempfile::TempDir;

const ETCD: &str = "/usr/bin/etcd";
const ETCDCTL: &str = "/usr/bin/etcdctl";
/// Generous: the test machine is often loaded, and a first election plus fsyncs can be slow.
const READY_DEADLINE: Duration = Duration::from_secs(30);
/// A picked port can be taken by someone else before etcd binds it; each retry picks anew.
const START_ATTEMPTS: usize = 5;
const POLL: Duration = Duration::from_millis(50);

/// A running etcd cluster of one or more members (m0, m1, ...) on 127.0.0.1.
/// Dropping it SIGKILLs every member and deletes their data.
pub struct Etcd {
    token: String,
    members: Vec<Member>,
}

struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    /// Holds `data/` (etcd's `--data-dir`) and `etcd.log` (its stdout and stderr). The log
    /// sits beside the data dir, not in it, so etcd never sees a file it does not know.
    dir: TempDir,
    /// `None` while killed.
    child: Option<Child>,
}

enum Wait {
    Ready,
    /// A member exited because one of its ports was taken: worth another try.
    PortTaken,
    Failed(String),
}

impl Etcd {
    /// Starts a new cluster of `members` (1 or 3 in weir's tests) and returns once every
    /// member answers `GET /health` with `{"health":"true"}`. Panics with the members' logs
    /// if that does not happen within 30 s.
    pub fn start(members: usize) -> Etcd {
        assert!(members >= 1, "an etcd cluster needs at least one member");
        let mut last = String::new();
        for _ in 0..START_ATTEMPTS {
            let mut etcd = Etcd::spawn(members);
            let all: Vec<usize> = (0..members).collect();
            match etcd.wait(&all) {
                Wait::Ready => return etcd,
                Wait::PortTaken => last = etcd.logs(),
                Wait::Failed(why) => panic!("etcd did not start: {why}\n{}", etcd.logs()),
            }
        }
        panic!("etcd did not start: ports taken {START_ATTEMPTS} times over\n{last}");
    }

    /// New ports, dirs and cluster token, every member spawned with `--initial-cluster-state new`.
    fn spawn(members: usize) -> Etcd {
        let ports = free_ports(2 * members);
        let mut etcd = Etcd {
            token: unique_token(),
            members: (0..members)
                .map(|i| Member {
                    name: format!("m{i}"),
                    client_port: ports[2 * i],
                    peer_port: ports[2 * i + 1],
                    dir: tempfile::Builder::new()
                        .prefix("weir-etcd-")
                        .tempdir()
                        .unwrap(),
                    child: None,
                })
                .collect(),
        };
        for i in 0..members {
            etcd.spawn_member(i, "new");
        }
        etcd
    }

    fn spawn_member(&mut self, i: usize, state: &str) {
        let cluster = self
            .members
            .iter()
            .map(|m| format!("{}=http://127.0.0.1:{}", m.name, m.peer_port))
            .collect::<Vec<_>>()
            .join(",");
        let m = &mut self.members[i];
        // Appended to, so a restarted member's log still shows how it died the first time.
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(m.log_path())
            .unwrap();
        let client = format!("http://127.0.0.1:{}", m.client_port);
        let peer = format!("http://127.0.0.1:{}", m.peer_port);
        let mut cmd = Command::new(ETCD);
        cmd.arg("--name")
            .arg(&m.name)
            .arg("--data-dir")
            .arg(m.dir.path().join("data"))
            .args(["--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &cluster])
            // Unique per cluster: should a port be reused by another test's etcd, the two
            // refuse each other (cluster ID mismatch) instead of merging.
            .args(["--initial-cluster-token", &self.token])
            .args(["--initial-cluster-state", state])
            // Quicker elections than 100/1000 ms; etcd wants election >= 5 x heartbeat, and
            // 10 x leaves room for a loaded machine's scheduling delays.
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
            // zap, not 3.4's default capnslog (which also prints a deprecation warning);
            // `--log-outputs stderr` keeps it off journald.
            .args([
                "--logger",
                "zap",
                "--log-outputs",
                "stderr",
                "--log-level",
                "warn",
            ])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        // etcd reads every ETCD_* variable as a flag: none of the caller's may leak in.
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("ETCD_") {
                cmd.env_remove(k);
            }
        }
        m.child = Some(
            cmd.spawn()
                .unwrap_or_else(|e| panic!("spawning {ETCD}: {e}")),
        );
    }

    /// Polls until the members `which` are healthy, one exits, or the deadline passes.
    fn wait(&mut self, which: &[usize]) -> Wait {
        let deadline = Instant::now() + READY_DEADLINE;
        let mut pending = which.to_vec();
        loop {
            let mut still = Vec::new();
            for &i in &pending {
                // Healthy counts only if our own process is still alive afterwards: if it
                // lost its port, the answer came from whoever holds that port.
                let healthy = healthy(self.members[i].client_port);
                let m = &mut self.members[i];
                let child = m.child.as_mut().expect("waiting for a killed member");
                if let Some(status) = child.try_wait().unwrap() {
                    m.child = None;
                    let log = m.log();
                    if log.contains("address already in use") {
                        return Wait::PortTaken;
                    }
                    return Wait::Failed(format!("{} exited ({status})", m.name));
                }
                if !healthy {
                    still.push(i);
                }
            }
            pending = still;
            if pending.is_empty() {
                return Wait::Ready;
            }
            if Instant::now() > deadline {
                let names: Vec<_> = pending.iter().map(|&i| &self.members[i].name).collect();
                return Wait::Failed(format!("{names:?} not healthy after {READY_DEADLINE:?}"));
            }
            sleep(POLL);
        }
    }

    /// Waits until every running member is healthy again: after a `kill`, the survivors
    /// may need an election before they serve writes. Panics with the logs after 30 s.
    pub fn wait_healthy(&mut self) {
        let running: Vec<usize> = (0..self.members.len())
            .filter(|&i| self.members[i].child.is_some())
            .collect();
        match self.wait(&running) {
            Wait::Ready => {}
            Wait::PortTaken => panic!("an etcd member lost its port\n{}", self.logs()),
            Wait::Failed(why) => panic!("etcd not healthy: {why}\n{}", self.logs()),
        }
    }

    /// Client addresses, `127.0.0.1:PORT`, one per member (killed ones included).
    pub fn endpoints(&self) -> Vec<String> {
        self.members
            .iter()
            .map(|m| format!("127.0.0.1:{}", m.client_port))
            .collect()
    }

    /// Client URLs, `http://127.0.0.1:PORT`, one per member.
    pub fn client_urls(&self) -> Vec<String> {
        self.endpoints()
            .iter()
            .map(|e| format!("http://{e}"))
            .collect()
    }

    /// The store URL weir's `--store` takes: `etcd://HOST:PORT[,HOST:PORT...]/PREFIX`.
    pub fn url(&self, prefix: &str) -> String {
        format!(
            "etcd://{}/{}",
            self.endpoints().join(","),
            prefix.trim_start_matches('/')
        )
    }

    /// SIGKILLs member `i` (no graceful shutdown, as in a crash). A no-op if already dead.
    /// Returns at once: if `i` led, writes time out until the others elect a new leader,
    /// which `wait_healthy` waits for.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.members[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts member `i` again (killing it first if it runs) on its old ports and data dir,
    /// with `--initial-cluster-state existing`, and waits until it is healthy.
    pub fn restart(&mut self, i: usize) {
        self.kill(i);
        // Its ports are fixed now (the others know its peer URL), so a port taken in the
        // meantime can only be waited out.
        for attempt in 1..=START_ATTEMPTS {
            self.spawn_member(i, "existing");
            match self.wait(&[i]) {
                Wait::Ready => return,
                Wait::PortTaken if attempt < START_ATTEMPTS => {
                    sleep(Duration::from_millis(200 * attempt as u64))
                }
                Wait::PortTaken => panic!("etcd m{i}'s ports stay taken\n{}", self.logs()),
                Wait::Failed(why) => panic!("etcd restart failed: {why}\n{}", self.logs()),
            }
        }
    }

    /// SIGKILLs every member (the store gone at once); `restart` brings them back.
    pub fn stop_all(&mut self) {
        for i in 0..self.members.len() {
            self.kill(i);
        }
    }

    /// Every member's log (etcd's stderr at `warn`), for a failing test to print.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for m in &self.members {
            out += &format!("--- etcd {} ({}) ---\n{}", m.name, m.client_port, m.log());
        }
        out
    }

    /// Writes `key` = `value` with etcdctl, as another writer of the store would.
    pub fn put(&self, key: &str, value: &str) {
        self.etcdctl(&["put", "--", key, value]);
    }

    /// The value at exactly `key`, read with etcdctl; `None` if there is none.
    pub fn get(&self, key: &str) -> Option<String> {
        // JSON, not --print-value-only, so an empty value and no key differ.
        let out: serde_json::Value =
            serde_json::from_str(&self.etcdctl(&["get", "-w", "json", "--", key])).unwrap();
        let value = out["kvs"].get(0)?["value"].as_str().unwrap_or("");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(value)
            .unwrap();
        Some(String::from_utf8(bytes).expect("etcd value is not UTF-8"))
    }

    /// Compacts the key space up to the current revision, so watches from any older one
    /// fail as compacted. Returns that revision. `--physical` returns only once the
    /// compaction is done on disk, so nothing of it is still in flight afterwards.
    pub fn compact(&self) -> i64 {
        let out: serde_json::Value =
            serde_json::from_str(&self.etcdctl(&["endpoint", "status", "-w", "json"])).unwrap();
        let rev = out
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["Status"]["header"]["revision"].as_i64())
            .max()
            .expect("no revision in etcdctl endpoint status");
        self.etcdctl(&["compaction", "--physical", &rev.to_string()]);
        rev
    }

    /// The index of the member that leads now (for a test that kills the leader).
    pub fn leader(&self) -> usize {
        let out: serde_json::Value =
            serde_json::from_str(&self.etcdctl(&["endpoint", "status", "-w", "json"])).unwrap();
        let leading = out.as_array().unwrap().iter().find(|s| {
            let st = &s["Status"];
            st["leader"].as_u64().is_some() && st["leader"] == st["header"]["member_id"]
        });
        let endpoint = leading
            .and_then(|s| s["Endpoint"].as_str())
            .unwrap_or_else(|| panic!("no leader in {out}"));
        self.members
            .iter()
            .position(|m| endpoint.ends_with(&format!(":{}", m.client_port)))
            .unwrap_or_else(|| panic!("{endpoint} is not a member"))
    }

    /// Runs etcdctl (v3 API) against the running members and returns its stdout; panics
    /// with its stderr and the members' logs if it fails.
    fn etcdctl(&self, args: &[&str]) -> String {
        let live: Vec<String> = self
            .members
            .iter()
            .filter(|m| m.child.is_some())
            .map(|m| format!("127.0.0.1:{}", m.client_port))
            .collect();
        assert!(!live.is_empty(), "etcdctl with every etcd member down");
        let out = Command::new(ETCDCTL)
            .env("ETCDCTL_API", "3")
            .arg("--endpoints")
            .arg(live.join(","))
            // Above the 2 s / 5 s defaults: a loaded machine can make either slow.
            .args(["--dial-timeout", "10s", "--command-timeout", "20s"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("running {ETCDCTL}: {e}"));
        if !out.status.success() {
            panic!(
                "etcdctl {args:?} failed ({}): {}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr),
                self.logs()
            );
        }
        String::from_utf8(out.stdout).unwrap()
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.stop_all();
    }
}

impl Member {
    fn log_path(&self) -> PathBuf {
        self.dir.path().join("etcd.log")
    }

    fn log(&self) -> String {
        let mut s = String::new();
        if let Ok(mut f) = File::open(self.log_path()) {
            let _ = f.read_to_string(&mut s);
        }
        s
    }
}

/// `n` distinct free loopback ports: all bound at once (so none repeats), then released
/// for etcd to take. Someone may take one in between: `start` retries then.
fn free_ports(n: usize) -> Vec<u16> {
    let held: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap())
        .collect();
    held.iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect()
}

/// Distinct across this process (counter) and across processes (pid, clock).
fn unique_token() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "weir-test-{}-{}-{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// `GET /health` answered `{"health":"true"}` (etcd 3.4: a leader, no alarm, and a read
/// served). Any error, timeout or other answer is "not yet".
fn healthy(port: u16) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else {
        return false;
    };
    // etcd's own check can take a while without a leader; it answers false then.
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = s.set_write_timeout(Some(Duration::from_secs(5)));
    let req =
        format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    if s.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut resp = String::new();
    let _ = s.read_to_string(&mut resp);
    resp.starts_with("HTTP/1.1 200") && resp.contains(r#""health":"true""#)
}
