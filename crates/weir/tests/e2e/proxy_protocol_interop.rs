//! The PROXY protocol with real programs: HAProxy in front of weir (`send-proxy-v2`), and
//! nginx behind it (`listen ... proxy_protocol`), each run as a plain process with its own
//! config in a temporary directory (installed by test.sh: `haproxy`, `nginx`).

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use weir_testkit::HttpUpstream;

use crate::client_addr::{get, raw_from, seen_xff};
use crate::common::{free_addr, Weir};

/// A child process killed when the test ends.
pub(crate) struct Proc(pub(crate) Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until `addr` accepts connections (the program is up), or panics with its log.
pub(crate) fn wait_port(p: &mut Proc, addr: SocketAddr, log: &std::path::Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
            return;
        }
        if let Ok(Some(s)) = p.0.try_wait() {
            panic!(
                "exited with {s}: {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("nothing listens on {addr}");
}

/// nginx as a plain process with `http` (the body of its `http` block: servers, logs) in a
/// config of its own in `dir`; its log is `dir/error.log`.
pub(crate) fn nginx(dir: &std::path::Path, http: &str) -> Proc {
    let d = dir.display();
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    let ncfg = dir.join("nginx.conf");
    std::fs::write(
        &ncfg,
        format!(
            r#"
worker_processes 1;
error_log {d}/error.log;
pid {d}/nginx.pid;
events {{ worker_connections 64; }}
http {{
    client_body_temp_path {d}/tmp;
    proxy_temp_path {d}/tmp;
    fastcgi_temp_path {d}/tmp;
    uwsgi_temp_path {d}/tmp;
    scgi_temp_path {d}/tmp;
{http}
}}
"#
        ),
    )
    .unwrap();
    Proc(
        Command::new("nginx")
            .args(["-p"])
            .arg(dir)
            .arg("-e")
            .arg(dir.join("error.log"))
            .arg("-c")
            .arg(&ncfg)
            // One process: killing a master leaves its workers running (and listening).
            .args(["-g", "daemon off; master_process off;"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx runs (apt-get install nginx)"),
    )
}

/// HAProxy as a plain process with `cfg` (its whole config) in `dir`, listening on `front`
/// once this returns; its errors go to `dir/haproxy.err`.
pub(crate) fn haproxy(dir: &std::path::Path, cfg: &str, front: SocketAddr) -> Proc {
    let hcfg = dir.join("haproxy.cfg");
    std::fs::write(&hcfg, cfg).unwrap();
    let err = dir.join("haproxy.err");
    let mut h = Proc(
        Command::new("haproxy")
            .arg("-f")
            .arg(&hcfg)
            .arg("-db")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .expect("haproxy runs (apt-get install haproxy)"),
    );
    wait_port(&mut h, front, &err);
    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn haproxy_in_front_sends_the_client_with_proxy_v2() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let (listen, front) = (free_addr(), free_addr());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    // HAProxy connects from 127.0.0.3, the one address weir trusts.
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "app"
proxy_protocol = true
trusted_proxies = ["127.0.0.3"]
access_log = "{}"

[pools.app]
endpoints = [{{ addr = "{}" }}]
"#,
        log.display(),
        up.addr()
    );
    let _w = Weir::start(&cfg, &[listen]);
    let _h = haproxy(
        dir.path(),
        &format!(
            "global\n  maxconn 64\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n\
             frontend fe\n  bind {front}\n  default_backend be\n\
             backend be\n  server weir {listen} send-proxy-v2 source 127.0.0.3\n"
        ),
        front,
    );
    // The client, from 127.0.0.9, claims to be someone else: the header wins.
    let r = raw_from(
        "127.0.0.9",
        front,
        &get("/headers", "X-Forwarded-For: 6.6.6.6\r\n"),
    )
    .await;
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    assert_eq!(seen_xff(&r), "127.0.0.9");
    let lines = crate::common::access_log(&log, 1);
    let client = lines[0]["client"].as_str().unwrap();
    assert!(client.starts_with("127.0.0.9:"), "{lines:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_behind_reads_send_proxy_v1_and_v2() {
    let (n1, n2, listen) = (free_addr(), free_addr(), free_addr());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let mut n = nginx(
        dir.path(),
        &format!(
            r#"
    log_format pp '$proxy_protocol_addr $remote_addr "$request"';
    access_log {d}/access.log pp;
    server {{
        listen {n1} proxy_protocol;
        listen {n2} proxy_protocol;
        location / {{ return 200 "pp=$proxy_protocol_addr\n"; }}
    }}
"#
        ),
    );
    let elog = dir.path().join("error.log");
    wait_port(&mut n, n1, &elog);
    wait_port(&mut n, n2, &elog);
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"

[routes.v1]
listener = "web"
host = "v1.test"
pool = "v1"

[routes.v2]
listener = "web"
host = "v2.test"
pool = "v2"

[pools.v1]
send_proxy = "v1"
endpoints = [{{ addr = "{n1}" }}]

[pools.v2]
send_proxy = "v2"
endpoints = [{{ addr = "{n2}" }}]
"#
    );
    let _w = Weir::start(&cfg, &[listen]);
    for (host, from) in [("v1.test", "127.0.0.7"), ("v2.test", "127.0.0.8")] {
        let req = format!("GET /{host} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        let r = raw_from(from, listen, req.as_bytes()).await;
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        assert!(r.contains(&format!("pp={from}")), "{r}");
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let text = loop {
        let t = std::fs::read_to_string(dir.path().join("access.log")).unwrap_or_default();
        if t.lines().count() >= 2 || Instant::now() > deadline {
            break t;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        text.contains("127.0.0.7 127.0.0.1 \"GET /v1.test"),
        "{text}"
    );
    assert!(
        text.contains("127.0.0.8 127.0.0.1 \"GET /v2.test"),
        "{text}"
    );
}

/// A test's nginx goes away whole when the test ends: its worker, a separate process, must
/// not outlive the `Proc` still listening on a port a later test may be handed.
#[test]
fn an_nginx_is_gone_with_its_test() {
    let dir = tempfile::tempdir().unwrap();
    let addr = free_addr();
    let mut p = nginx(
        dir.path(),
        &format!("server {{ listen {addr}; location / {{ return 200 \"up\\n\"; }} }}"),
    );
    wait_port(&mut p, addr, &dir.path().join("error.log"));
    drop(p);
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
        assert!(
            Instant::now() < deadline,
            "something still listens on {addr} after nginx was stopped"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
