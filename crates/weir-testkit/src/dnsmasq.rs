//! A real DNS server for tests: Debian's dnsmasq on 127.0.0.1 at a free port, answering from
//! a hosts file the test rewrites (SIGHUP makes dnsmasq read it again) and from SRV records
//! given at start, and logging every query, so a test counts what weir asked. No mock: weir's
//! resolver has to cope with what a real server does (TTLs, NXDOMAIN, NODATA, going away).
//!
//! Names are under `weir.test`, which dnsmasq answers alone (`--local`): a name it does not
//! have is NXDOMAIN, never forwarded. Everything here blocks: call it from a plain `#[test]`,
//! or from `spawn_blocking` in an async one.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use tempfile::TempDir;

const DNSMASQ: &str = "/usr/sbin/dnsmasq";
/// Generous: the test machine is often loaded.
const DEADLINE: Duration = Duration::from_secs(20);
const POLL: Duration = Duration::from_millis(20);
/// The domain dnsmasq answers for itself.
pub const DOMAIN: &str = "weir.test";

/// An SRV record: `name` points at `target:port` with `priority` and `weight`.
#[derive(Debug, Clone)]
pub struct Srv {
    pub name: String,
    pub target: String,
    pub port: u16,
    pub priority: u16,
    pub weight: u16,
}

/// A running dnsmasq; dropping it kills it.
pub struct Dnsmasq {
    dir: TempDir,
    port: u16,
    ttl: u32,
    srv: Vec<Srv>,
    child: Option<Child>,
}

impl Dnsmasq {
    /// Starts dnsmasq answering `hosts` (`(ip, name)` lines) with records of `ttl` seconds,
    /// and returns once it answers a query.
    pub fn start(hosts: &[(&str, &str)], ttl: u32) -> Dnsmasq {
        Dnsmasq::start_with_srv(hosts, ttl, Vec::new())
    }

    /// [`Dnsmasq::start`] with SRV records too.
    pub fn start_with_srv(hosts: &[(&str, &str)], ttl: u32, srv: Vec<Srv>) -> Dnsmasq {
        let mut d = Dnsmasq {
            dir: tempfile::tempdir().unwrap(),
            port: 0,
            ttl,
            srv,
            child: None,
        };
        write_hosts(&d.hosts_file(), hosts);
        for _ in 0..5 {
            d.port = free_udp_and_tcp_port();
            if d.spawn() {
                return d;
            }
        }
        panic!("dnsmasq did not start:\n{}", d.log());
    }

    /// `127.0.0.1:PORT`, for `[global] resolvers`.
    pub fn addr(&self) -> SocketAddr {
        (Ipv4Addr::LOCALHOST, self.port).into()
    }

    fn hosts_file(&self) -> PathBuf {
        self.dir.path().join("hosts")
    }

    fn log_file(&self) -> PathBuf {
        self.dir.path().join("log")
    }

    /// Everything dnsmasq logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_file()).unwrap_or_default()
    }

    /// How many queries of `qtype` (`A`, `AAAA`, `SRV`) for `name` it was asked.
    pub fn queries(&self, qtype: &str, name: &str) -> usize {
        let needle = format!("query[{qtype}] {name} from ");
        self.log().lines().filter(|l| l.contains(&needle)).count()
    }

    /// Replaces the hosts file and returns once dnsmasq has read it again.
    pub fn set_hosts(&self, hosts: &[(&str, &str)]) {
        let reads = self.reads();
        let tmp = self.dir.path().join("hosts.new");
        write_hosts(&tmp, hosts);
        std::fs::rename(&tmp, self.hosts_file()).unwrap();
        let pid = self.child.as_ref().expect("dnsmasq is not running").id();
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(pid as i32, libc::SIGHUP) };
        let deadline = Instant::now() + DEADLINE;
        while self.reads() == reads {
            assert!(
                Instant::now() < deadline,
                "dnsmasq did not read its hosts file again:\n{}",
                self.log()
            );
            sleep(POLL);
        }
    }

    /// How many times dnsmasq read the hosts file.
    fn reads(&self) -> usize {
        let needle = format!("read {} ", self.hosts_file().display());
        self.log().lines().filter(|l| l.contains(&needle)).count()
    }

    /// Kills dnsmasq (SIGKILL): the port answers nothing until [`Dnsmasq::restart`].
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts dnsmasq again on the same port, hosts file and SRV records (`srv` replaces
    /// them when given), once it answers.
    pub fn restart(&mut self, srv: Option<Vec<Srv>>) {
        self.kill();
        if let Some(srv) = srv {
            self.srv = srv;
        }
        let deadline = Instant::now() + DEADLINE;
        // The port was ours; something else binding it meanwhile is unlikely but retried.
        while !self.spawn() {
            assert!(
                Instant::now() < deadline,
                "dnsmasq did not start again on port {}: {}\n{}",
                self.port,
                std::fs::read_to_string(self.dir.path().join("stderr")).unwrap_or_default(),
                self.log()
            );
            sleep(Duration::from_millis(200));
        }
    }

    /// Starts dnsmasq and waits until it answers; false if it exited (its port taken).
    fn spawn(&mut self) -> bool {
        let mut cmd = Command::new(DNSMASQ);
        cmd.args([
            "--no-daemon",
            &format!("--port={}", self.port),
            "--listen-address=127.0.0.1",
            "--bind-interfaces",
            "--no-resolv",
            "--no-hosts",
            &format!("--local=/{DOMAIN}/"),
            &format!("--addn-hosts={}", self.hosts_file().display()),
            &format!("--local-ttl={}", self.ttl),
            "--log-queries",
            &format!("--log-facility={}", self.log_file().display()),
            // The cache would not change what a local answer is; none keeps it simple.
            "--cache-size=0",
        ]);
        for s in &self.srv {
            cmd.arg(format!(
                "--srv-host={},{},{},{},{}",
                s.name, s.target, s.port, s.priority, s.weight
            ));
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(
                std::fs::File::create(self.dir.path().join("stderr"))
                    .map_or_else(|_| Stdio::null(), Stdio::from),
            )
            .spawn()
            .expect("dnsmasq (apt-get install dnsmasq-base)");
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Ok(Some(_)) = child.try_wait() {
                return false;
            }
            if answers(self.port) {
                self.child = Some(child);
                return true;
            }
            assert!(
                Instant::now() < deadline,
                "dnsmasq does not answer:\n{}",
                self.log()
            );
            sleep(POLL);
        }
    }
}

impl Drop for Dnsmasq {
    fn drop(&mut self) {
        self.kill();
    }
}

fn write_hosts(path: &std::path::Path, hosts: &[(&str, &str)]) {
    let text: String = hosts.iter().map(|(ip, n)| format!("{ip} {n}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// A port free for both UDP and TCP on 127.0.0.1 now (dnsmasq takes both), below the kernel's
/// ephemeral range. A port from that range, left free while a test has dnsmasq killed, may
/// become the local port of another test's outgoing connection (the memory tests open
/// thousands), and dnsmasq could not bind it again for as long as that connection lasts.
fn free_udp_and_tcp_port() -> u16 {
    const LOWEST: u16 = 10_000;
    let ephemeral = ephemeral_low();
    loop {
        let port = if ephemeral > LOWEST + 1000 {
            rand::random_range(LOWEST..ephemeral)
        } else {
            // An ephemeral range that leaves no room below it: take the kernel's pick.
            let udp = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
            udp.local_addr().unwrap().port()
        };
        let udp = UdpSocket::bind((Ipv4Addr::LOCALHOST, port));
        if udp.is_ok() && TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
            return port;
        }
    }
}

/// The lowest port the kernel hands out to sockets bound to port 0 or connecting.
fn ephemeral_low() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768)
}

/// Whether a DNS server on `port` answers a query (for `ready.weir.test` A): any reply will do.
fn answers(port: u16) -> bool {
    let Ok(sock) = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)) else {
        return false;
    };
    let _ = sock.set_read_timeout(Some(Duration::from_millis(200)));
    // Header: id 0x7765, RD, one question; then the name, type A, class IN.
    let mut q = vec![0x77, 0x65, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    for label in ["ready", "weir", "test"] {
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.extend_from_slice(&[0, 0, 1, 0, 1]);
    if sock.send_to(&q, (Ipv4Addr::LOCALHOST, port)).is_err() {
        return false;
    }
    let mut buf = [0u8; 512];
    matches!(sock.recv_from(&mut buf), Ok((n, _)) if n >= 12 && buf[..2] == [0x77, 0x65])
}
