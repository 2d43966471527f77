//! Real etcd clusters for tests: `/usr/bin/etcd` (3.4) processes on loopback, each member
//! in its own temporary directory, torn down on drop. No mock: weir's store has to cope
//! with what a real etcd does (elections, compaction, members dying).
//!
//! Everything here blocks (child processes, polling): call it from a plain `#[test]`, or
//! from `spawn_blocking` in an async one.
//!
//! [`Etcd::builder`] starts a member that serves its clients over TLS (certificates made per
//! cluster by rcgen: [`Etcd::tls`] has the CA and a client certificate), optionally only to
//! clients with a certificate that CA signed (`--client-cert-auth`); [`Etcd::enable_auth`]
//! turns on etcd's users and passwords. The harness's own etcdctl calls keep working either
//! way: they get the CA, the client certificate and root's password.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use tempfile::TempDir;

use crate::certs::{Ca, Pair};

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
    tls: Option<Tls>,
    /// `--auth-token-ttl` (seconds): how long etcd's simple auth tokens live unused.
    auth_token_ttl: Option<u32>,
    /// root's password once [`Etcd::enable_auth`] ran: etcdctl then logs in with it.
    root_password: Option<String>,
}

/// How an etcd cluster is started: [`Etcd::builder`].
#[derive(Debug, Clone)]
pub struct Builder {
    members: usize,
    tls: bool,
    client_cert_auth: bool,
    auth_token_ttl: Option<u32>,
}

impl Builder {
    /// Clients talk TLS to every member (`https://` client URLs, `--cert-file`/`--key-file`);
    /// the certificate, for `127.0.0.1`, is signed by a CA made for this cluster. Peers
    /// still talk plain HTTP to each other.
    pub fn tls(mut self) -> Builder {
        self.tls = true;
        self
    }

    /// TLS, and only clients with a certificate the cluster's CA signed are taken
    /// (`--client-cert-auth --trusted-ca-file`).
    pub fn client_cert_auth(mut self) -> Builder {
        self.tls = true;
        self.client_cert_auth = true;
        self
    }

    /// `--auth-token-ttl SECS`: once authentication is on, a token unused that long is
    /// invalid (etcd's default: 300 s), so a client must log in again.
    pub fn auth_token_ttl(mut self, secs: u32) -> Builder {
        self.auth_token_ttl = Some(secs);
        self
    }

    /// Starts the cluster and returns once every member is healthy (see [`Etcd::start`]).
    pub fn start(self) -> Etcd {
        assert!(
            self.members >= 1,
            "an etcd cluster needs at least one member"
        );
        // Made once: a retry on other ports keeps the same files.
        let tls = self.tls.then(|| Tls::new(self.client_cert_auth));
        let mut last = String::new();
        for _ in 0..START_ATTEMPTS {
            let mut etcd = Etcd::spawn(&self, tls.clone());
            let all: Vec<usize> = (0..self.members).collect();
            match etcd.wait(&all) {
                Wait::Ready => return etcd,
                Wait::PortTaken => last = etcd.logs(),
                Wait::Failed(why) => panic!("etcd did not start: {why}\n{}", etcd.logs()),
            }
        }
        panic!("etcd did not start: ports taken {START_ATTEMPTS} times over\n{last}");
    }
}

/// The certificates of a TLS cluster, as PEM files in a directory that lives as long as
/// the [`Etcd`].
#[derive(Clone)]
pub struct Tls {
    dir: Arc<TempDir>,
    /// The CA that signed the members' certificate (and the client certificate): what a
    /// client must trust (weir's `--store-ca`, etcdctl's `--cacert`).
    pub ca: PathBuf,
    /// The members' certificate (SANs `127.0.0.1` and `localhost`) and its key.
    pub server: Pair,
    /// A client certificate (CN `weir`) the CA signed, and its key: weir's `--store-cert`
    /// and `--store-key`, etcdctl's `--cert` and `--key`.
    pub client: Pair,
    /// Whether the members refuse clients without such a certificate.
    pub client_cert_auth: bool,
}

impl Tls {
    fn new(client_cert_auth: bool) -> Tls {
        let dir = tempfile::Builder::new()
            .prefix("weir-etcd-tls-")
            .tempdir()
            .unwrap();
        let ca = Ca::new("weir test etcd CA");
        Tls {
            ca: ca.write(dir.path(), "ca"),
            server: ca
                .leaf(&["127.0.0.1", "localhost"])
                .write(dir.path(), "server"),
            client: ca.leaf(&["weir"]).write(dir.path(), "client"),
            client_cert_auth,
            dir: Arc::new(dir),
        }
    }

    /// The directory the files are in (a test may write more certificates there).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
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
    /// SIGSTOPped by [`Etcd::stop`]: alive, its sockets open, answering nothing.
    stopped: bool,
}

enum Wait {
    Ready,
    /// A member exited because one of its ports was taken: worth another try.
    PortTaken,
    Failed(String),
}

impl Etcd {
    /// Starts a new cluster of `members` (1 or 3 in weir's tests), plain HTTP, no
    /// authentication, and returns once every member answers `GET /health` with
    /// `{"health":"true"}`. Panics with the members' logs if that does not happen within 30 s.
    pub fn start(members: usize) -> Etcd {
        Etcd::builder(members).start()
    }

    /// A cluster of `members` to be started with TLS, client-certificate auth or a short
    /// auth token ttl: `Etcd::builder(1).client_cert_auth().start()`.
    pub fn builder(members: usize) -> Builder {
        Builder {
            members,
            tls: false,
            client_cert_auth: false,
            auth_token_ttl: None,
        }
    }

    /// New ports, dirs and cluster token, every member spawned with `--initial-cluster-state new`.
    fn spawn(b: &Builder, tls: Option<Tls>) -> Etcd {
        let members = b.members;
        let ports = free_ports(2 * members);
        let mut etcd = Etcd {
            token: unique_token(),
            tls,
            auth_token_ttl: b.auth_token_ttl,
            root_password: None,
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
                    stopped: false,
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
        let scheme = self.scheme();
        let mut cmd = Command::new(ETCD);
        if let Some(t) = &self.tls {
            cmd.arg("--cert-file")
                .arg(&t.server.cert)
                .arg("--key-file")
                .arg(&t.server.key);
            if t.client_cert_auth {
                cmd.arg("--client-cert-auth")
                    .arg("--trusted-ca-file")
                    .arg(&t.ca);
            }
        }
        if let Some(secs) = self.auth_token_ttl {
            cmd.args(["--auth-token-ttl", &secs.to_string()]);
        }
        let m = &mut self.members[i];
        // Appended to, so a restarted member's log still shows how it died the first time.
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(m.log_path())
            .unwrap();
        let client = format!("{scheme}://127.0.0.1:{}", m.client_port);
        let peer = format!("http://127.0.0.1:{}", m.peer_port);
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
                let healthy = self.healthy(i);
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

    /// Waits until every running member is healthy again: after a `kill` or `stop`, the
    /// others may need an election before they serve writes. Panics with the logs after 30 s.
    pub fn wait_healthy(&mut self) {
        let running: Vec<usize> = (0..self.members.len())
            .filter(|&i| self.members[i].answers())
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

    /// Client URLs, `http://127.0.0.1:PORT` (`https://` with TLS), one per member.
    pub fn client_urls(&self) -> Vec<String> {
        self.endpoints()
            .iter()
            .map(|e| format!("{}://{e}", self.scheme()))
            .collect()
    }

    /// The certificates, if the members serve their clients over TLS.
    pub fn tls(&self) -> Option<&Tls> {
        self.tls.as_ref()
    }

    /// Turns on etcd's authentication: user `root` with `password` (and the root role),
    /// then `auth enable`. From then on every client needs a user (or, with client-cert
    /// auth, a certificate whose CN is one); this harness's etcdctl calls log in as root.
    pub fn enable_auth(&mut self, password: &str) {
        self.etcdctl(&["user", "add", "root", "--new-user-password", password]);
        // etcdctl adds the root role and grants it to root when it is missing.
        self.etcdctl(&["auth", "enable"]);
        self.root_password = Some(password.to_string());
    }

    /// Adds user `name` with `password`, allowed to read and write the keys under `prefix`
    /// (and nothing else), as an operator would for one weir cluster. Needs no auth on yet,
    /// or [`Etcd::enable_auth`] first.
    pub fn add_user(&self, name: &str, password: &str, prefix: &str) {
        self.etcdctl(&["role", "add", name]);
        self.etcdctl(&[
            "role",
            "grant-permission",
            name,
            "readwrite",
            "--prefix=true",
            "--",
            prefix,
        ]);
        self.etcdctl(&["user", "add", name, "--new-user-password", password]);
        self.etcdctl(&["user", "grant-role", name, name]);
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
        let m = &mut self.members[i];
        m.stopped = false;
        if let Some(mut child) = m.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGSTOPs member `i`: a member that hangs. Its process and sockets stay, so clients'
    /// connections stay open and their requests get no answer (a killed member's refuse at
    /// once). [`Etcd::cont`] lets it go on; the harness's own etcdctl calls leave it out
    /// meanwhile.
    pub fn stop(&mut self, i: usize) {
        self.signal(i, libc::SIGSTOP);
        self.members[i].stopped = true;
    }

    /// SIGCONTs member `i` after [`Etcd::stop`].
    pub fn cont(&mut self, i: usize) {
        self.signal(i, libc::SIGCONT);
        self.members[i].stopped = false;
    }

    fn signal(&self, i: usize, sig: i32) {
        let m = &self.members[i];
        let child = m
            .child
            .as_ref()
            .unwrap_or_else(|| panic!("etcd {} is not running", m.name));
        // SAFETY: kill(2) on our own child's pid, which we have not reaped.
        let r = unsafe { libc::kill(child.id() as i32, sig) };
        assert_eq!(
            r,
            0,
            "signal {sig} to etcd {}: {}",
            m.name,
            std::io::Error::last_os_error()
        );
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

    fn scheme(&self) -> &'static str {
        match self.tls {
            Some(_) => "https",
            None => "http",
        }
    }

    /// etcdctl (v3 API) for `endpoints`, with the CA, the client certificate and root's
    /// password as the cluster needs them.
    fn etcdctl_command(&self, endpoints: &[String]) -> Command {
        let mut cmd = Command::new(ETCDCTL);
        cmd.arg("--endpoints")
            .arg(endpoints.join(","))
            .stdin(Stdio::null());
        // As for etcd: any ETCDCTL_* of the caller's would be read as a flag.
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("ETCDCTL_") {
                cmd.env_remove(k);
            }
        }
        cmd.env("ETCDCTL_API", "3");
        if let Some(t) = &self.tls {
            cmd.arg("--cacert")
                .arg(&t.ca)
                .arg("--cert")
                .arg(&t.client.cert)
                .arg("--key")
                .arg(&t.client.key);
        }
        if let Some(p) = &self.root_password {
            cmd.arg("--user").arg(format!("root:{p}"));
        }
        cmd
    }

    /// Member `i` is healthy. Without TLS and auth: `GET /health` (as before). Otherwise
    /// `etcdctl endpoint health`, which talks TLS with the cluster's CA and client
    /// certificate and logs in: a read through consensus answered (or refused for
    /// permissions, which etcdctl counts as healthy too).
    fn healthy(&self, i: usize) -> bool {
        let port = self.members[i].client_port;
        if self.tls.is_none() && self.root_password.is_none() {
            return healthy(port);
        }
        let endpoint = format!("{}://127.0.0.1:{port}", self.scheme());
        self.etcdctl_command(&[endpoint])
            .args(["--dial-timeout", "1s", "--command-timeout", "5s"])
            .args(["endpoint", "health"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Runs etcdctl (v3 API) against the running members and returns its stdout; panics
    /// with its stderr and the members' logs if it fails.
    fn etcdctl(&self, args: &[&str]) -> String {
        let live: Vec<String> = self
            .members
            .iter()
            .filter(|m| m.answers())
            .map(|m| format!("{}://127.0.0.1:{}", self.scheme(), m.client_port))
            .collect();
        assert!(!live.is_empty(), "etcdctl with every etcd member down");
        let out = self
            .etcdctl_command(&live)
            // Above the 2 s / 5 s defaults: a loaded machine can make either slow.
            .args(["--dial-timeout", "10s", "--command-timeout", "20s"])
            .args(args)
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
    /// Running, and not stopped.
    fn answers(&self) -> bool {
        self.child.is_some() && !self.stopped
    }

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
