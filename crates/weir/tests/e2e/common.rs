//! Running the real `weir` binary in tests: write a config, start the
//! process, wait until it listens, read its log, reload, signal it.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const WEIR: &str = env!("CARGO_BIN_EXE_weir");

/// A port nobody listens on right now, and never handed out before in this test process.
///
/// Picked below the kernel's ephemeral range (32768–60999 here), from 20000–31999: any
/// program's outgoing connection or `bind(:0)` takes ports from that range, so a port the
/// OS handed out as free could be taken again before weir binds it, or before a test checks
/// that nothing listens there (both failed once with two suites running at once). Here only
/// a program binding that very port by number can take it. The walk starts at a place of
/// the process's own, so two suites at once rarely meet; bench/ uses 18000–18100.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
    const FIRST: u32 = 20_000;
    const COUNT: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    if NEXT.load(Relaxed) == u32::MAX {
        let seed = std::process::id()
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos();
        let _ = NEXT.compare_exchange(u32::MAX, seed % COUNT, Relaxed, Relaxed);
    }
    for _ in 0..COUNT {
        let port = (FIRST + NEXT.fetch_add(1, Relaxed) % COUNT) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in {FIRST}..{}", FIRST + COUNT);
}

pub fn free_addr() -> SocketAddr {
    format!("127.0.0.1:{}", free_port()).parse().unwrap()
}

pub struct Weir {
    pub child: Child,
    /// The admin listener (health, metrics, stats, dashboard).
    pub admin: SocketAddr,
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
    log: Arc<Mutex<Vec<String>>>,
    /// Set when weir's stderr reached its end: every line it wrote is in `log`.
    log_done: Arc<std::sync::atomic::AtomicBool>,
}

/// weir's log filter in tests: `info`, or `WEIR_TEST_RUST_LOG` to look closer (with
/// `WEIR_TEST_LOG` to see the lines).
fn test_log() -> String {
    std::env::var("WEIR_TEST_RUST_LOG").unwrap_or_else(|_| "info".into())
}

impl Weir {
    /// Starts `weir run` on `toml` and waits until every address in `wait_for`
    /// and the admin listener accept connections.
    pub fn start(toml: &str, wait_for: &[SocketAddr]) -> Weir {
        Self::start_with(toml, wait_for, &["--threads", "2"])
    }

    pub fn start_with(toml: &str, wait_for: &[SocketAddr], extra: &[&str]) -> Weir {
        Self::start_logging(toml, wait_for, extra, &test_log())
    }

    /// [`Weir::start_with`], with weir's log filtered by `filter` (`RUST_LOG` syntax): a test
    /// whose failure a debug line would explain shows them in its message.
    pub fn start_logging(
        toml: &str,
        wait_for: &[SocketAddr],
        extra: &[&str],
        filter: &str,
    ) -> Weir {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("weir.toml");
        std::fs::write(&config, toml).unwrap();
        let admin = free_addr();
        let mut args = vec![
            "run".to_string(),
            "-c".into(),
            config.display().to_string(),
            "--admin".into(),
            admin.to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        Self::spawn(dir, config, &args, wait_for, admin, filter)
    }

    /// Starts `weir run --data DIR` (the store mode: no file) on `dir`, and waits for the
    /// admin listener. `dir` outlives the process, so a test can restart on the same store.
    pub fn store(dir: &std::path::Path) -> Weir {
        Self::store_on(dir, free_addr(), &[])
    }

    pub fn store_on(dir: &std::path::Path, admin: SocketAddr, extra: &[&str]) -> Weir {
        let tmp = tempfile::tempdir().unwrap();
        let config = tmp.path().join("unused.toml");
        let mut args = vec![
            "run".to_string(),
            "--data".into(),
            dir.display().to_string(),
            "--admin".into(),
            admin.to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        Self::spawn(tmp, config, &args, &[admin], admin, &test_log())
    }

    /// Runs `weir ARGS... --admin ADDR` (`run` or `demo`) and waits for `wait_for`.
    pub fn command(args: &[&str], wait_for: &[SocketAddr]) -> Weir {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("weir.toml");
        let admin = free_addr();
        let mut args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        args.extend(["--admin".to_string(), admin.to_string()]);
        Self::spawn(dir, config, &args, wait_for, admin, &test_log())
    }

    fn spawn(
        dir: tempfile::TempDir,
        config: PathBuf,
        args: &[String],
        wait_for: &[SocketAddr],
        admin: SocketAddr,
        log: &str,
    ) -> Weir {
        let mut child = Command::new(WEIR)
            .args(args)
            .env("RUST_LOG", log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start weir");
        let log = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = log.clone();
        let log_done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let done = log_done.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if std::env::var_os("WEIR_TEST_LOG").is_some() {
                    eprintln!("weir| {line}");
                }
                sink.lock().unwrap().push(line);
            }
            done.store(true, std::sync::atomic::Ordering::Release);
        });
        let mut w = Weir {
            child,
            admin,
            dir,
            config,
            log,
            log_done,
        };
        for a in wait_for {
            w.wait_listening(*a);
        }
        // weir opens the admin listener after the config's listeners: a test that calls
        // it as soon as those accept would race it. (Nothing to wait for: the test
        // expects weir to refuse to start.)
        if !wait_for.is_empty() {
            w.wait_listening(admin);
        }
        w
    }

    pub fn wait_listening(&mut self, addr: SocketAddr) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("weir exited with {status}; log:\n{}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("weir not listening on {addr}; log:\n{}", self.log_text());
    }

    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    pub fn log_lines(&self) -> usize {
        self.log.lock().unwrap().len()
    }

    /// Waits for a log line after line `from` containing `needle`.
    pub fn wait_log(&self, from: usize, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            {
                let log = self.log.lock().unwrap();
                if let Some(l) = log.iter().skip(from).find(|l| l.contains(needle)) {
                    return l.clone();
                }
            }
            if Instant::now() > deadline {
                panic!("no log line with {needle:?}; log:\n{}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as i32, sig);
        }
    }

    /// Rewrites the config and sends SIGHUP; waits for the outcome line and
    /// returns it ("config reloaded", "reload rejected", "config unchanged").
    ///
    /// The file watcher loads the file too, before or after the SIGHUP's load, and an
    /// earlier `reload`'s watcher load may land after this one began: so the outcome taken
    /// is the one that follows this SIGHUP's "SIGHUP: reloading" line (weir's loads run one
    /// at a time, each logging its outcome before the next starts). When that load found
    /// the file unchanged, the watcher had already loaded this content: its outcome, since
    /// `from`, is the answer.
    pub fn reload(&self, toml: &str) -> String {
        let from = self.log_lines();
        // Write to a temp name and rename, as editors do.
        let tmp = self.dir.path().join(".weir.toml.tmp");
        std::fs::write(&tmp, toml).unwrap();
        std::fs::rename(&tmp, &self.config).unwrap();
        self.signal(libc::SIGHUP);
        let outcome = |l: &str| {
            l.contains("config reloaded")
                || l.contains("reload rejected")
                || l.contains("reload failed")
                || l.contains("config unchanged")
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            {
                let log = self.log.lock().unwrap();
                let lines: Vec<&String> = log.iter().skip(from).collect();
                let marker = lines.iter().position(|l| l.contains("SIGHUP: reloading"));
                if let Some(m) = marker {
                    if let Some(l) = lines[m + 1..].iter().find(|l| outcome(l)) {
                        if !l.contains("config unchanged") {
                            return l.to_string();
                        }
                        let earlier = lines[..m].iter().rev().find(|l| outcome(l));
                        return earlier.unwrap_or(l).to_string();
                    }
                }
            }
            if Instant::now() > deadline {
                panic!("no reload outcome; log:\n{}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for weir to exit and for the last of its log to be read: the reader thread
    /// may still be behind when the process is gone (a loaded machine showed it), and tests
    /// read the log next. A command weir ran may hold the pipe open after it: then the log
    /// is returned as far as it got by the deadline.
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                while !self.log_done.load(std::sync::atomic::Ordering::Acquire)
                    && Instant::now() < deadline
                {
                    std::thread::sleep(Duration::from_millis(10));
                }
                return s;
            }
            if Instant::now() > deadline {
                panic!("weir did not exit; log:\n{}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Weir {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A pool table body: `endpoints = [...]` for these upstreams with weights.
pub fn endpoints(list: &[(SocketAddr, u32)]) -> String {
    let items: Vec<String> = list
        .iter()
        .map(|(a, w)| format!("{{ addr = \"{a}\", weight = {w} }}"))
        .collect();
    format!("endpoints = [{}]", items.join(", "))
}

/// Sends raw bytes, then reads until the server closes or `timeout` passes.
pub async fn raw_exchange(addr: SocketAddr, bytes: &[u8], timeout: Duration) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(bytes).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(timeout, s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

/// The one-listener, one-pool config most tests start from.
pub fn one_pool(listen: SocketAddr, eps: &str, pool_extra: &str) -> String {
    format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "app"

[pools.app]
{eps}
{pool_extra}
"#
    )
}

/// The JSON lines of the access log at `path` once it has at least `n` (or whatever it has
/// after 20 s, for the caller's assertion to show). Only whole lines count: the writer may be
/// half-way through the last one.
pub fn access_log(path: &std::path::Path, n: usize) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let whole = text.rsplit_once('\n').map_or("", |(done, _)| done);
        let lines: Vec<serde_json::Value> = whole
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
            .collect();
        if lines.len() >= n || Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A process's resident memory, from /proc (KiB).
pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// A process's resident memory once it holds still: the same figure twice, a moment apart
/// (KiB). Waits as long as that takes, so a loaded machine only makes it slower.
pub async fn settled_rss(pid: u32) -> u64 {
    let mut rss = rss_kib(pid);
    loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = rss_kib(pid);
        if now == rss {
            return rss;
        }
        rss = now;
    }
}

/// A backend that reads one request head and answers `resp`, then closes.
pub async fn fixed_backend(resp: &'static str) -> SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut b = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut b).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&b[..n]),
                    }
                }
                let _ = s.write_all(resp.as_bytes()).await;
                let _ = s.shutdown().await;
                // Hold the socket until the peer closes.
                let _ = s.read(&mut b).await;
            });
        }
    });
    addr
}
