//! `weir ctl` against the real binary in store mode (`weir run --data DIR`, no file).

use std::io::Write;
use std::net::SocketAddr;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use weir_testkit::{client, HttpUpstream};

use crate::common::{free_addr, Weir, WEIR};

/// A weir whose config lives in its store, started empty.
struct Store {
    w: Weir,
    _data: tempfile::TempDir,
}

impl Store {
    fn start() -> Store {
        Self::start_with(&[])
    }

    fn start_with(extra: &[&str]) -> Store {
        let data = tempfile::tempdir().unwrap();
        let dir = data.path().join("db").display().to_string();
        let mut args = vec!["run", "--data", &dir, "--threads", "2"];
        args.extend(extra);
        let mut w = Weir::command(&args, &[]);
        let admin = w.admin;
        w.wait_listening(admin);
        Store { w, _data: data }
    }

    fn url(&self) -> String {
        format!("http://{}", self.w.admin)
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(WEIR);
        c.arg("ctl").args(args).env("WEIR_URL", self.url());
        c.env_remove("WEIR_TOKEN");
        c
    }

    /// Runs `weir ctl ARGS...`: exit code, stdout, stderr.
    fn ctl(&self, args: &[&str]) -> (i32, String, String) {
        out(self.cmd(args).stdin(Stdio::null()).output().unwrap())
    }

    /// Runs a ctl command that must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let (code, stdout, stderr) = self.ctl(args);
        assert_eq!(
            code, 0,
            "weir ctl {args:?}\nstdout: {stdout}\nstderr: {stderr}"
        );
        stdout
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.extend(["-o", "json"]);
        let s = self.ok(&a);
        serde_json::from_str(&s).unwrap_or_else(|e| panic!("{e}: {s}"))
    }

    /// `{addr: weight}` of one pool's endpoints, as `get endpoints` shows them.
    fn endpoints(&self, pool: &str) -> Vec<(String, Value)> {
        let v = self.json(&["get", "endpoints", "--pool", pool]);
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["name"].as_str().unwrap().to_owned(),
                    e["spec"]["weight"].clone(),
                )
            })
            .collect()
    }
}

fn out(o: Output) -> (i32, String, String) {
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_create_then_get_shows_it_and_traffic_flows() {
    let a = HttpUpstream::spawn("a").await.unwrap();
    let b = HttpUpstream::spawn("b").await.unwrap();
    let s = Store::start();
    let ea = format!("{}:3", a.addr());
    let eb = b.addr().to_string();
    let o = s.ok(&[
        "pool",
        "create",
        "app",
        "--endpoint",
        &ea,
        "--endpoint",
        &eb,
        "--balance",
        "least_conn",
    ]);
    assert!(o.contains("pool app created with 2 endpoints"), "{o}");

    let pools = s.json(&["get", "pools"]);
    assert_eq!(pools.as_array().unwrap().len(), 1, "{pools}");
    assert_eq!(pools[0]["name"], "app");
    assert_eq!(pools[0]["spec"]["balance"], "least_conn");
    assert!(pools[0]["version"].as_u64().unwrap() > 0);
    let mut eps = s.endpoints("app");
    eps.sort_by(|x, y| x.0.cmp(&y.0));
    let mut want = vec![
        (a.addr().to_string(), Value::from(3)),
        (b.addr().to_string(), Value::Null),
    ];
    want.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(eps, want);

    let table = s.ok(&["get", "pools"]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("NAME  VERSION  BALANCE"), "{table}");
    assert!(
        lines[1].starts_with("app ") && lines[1].contains("least_conn"),
        "{table}"
    );
    let table = s.ok(&["get", "endpoints"]);
    assert!(table.starts_with("POOL  ADDR"), "{table}");
    assert_eq!(table.lines().count(), 3, "{table}");

    // The store's config reaches the data plane.
    let listen = free_addr();
    let o = s.ok(&[
        "listener",
        "create",
        "web",
        "--bind",
        &listen.to_string(),
        "--pool",
        "app",
    ]);
    assert!(o.contains("listener web created"), "{o}");
    let r = client::get(listen, "/").await.unwrap();
    assert_eq!(r.status, 200);

    // A second create of the same pool is refused and changes nothing.
    let (code, _, err) = s.ctl(&["pool", "create", "app", "--endpoint", &eb]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("already exists"), "{err}");
}

#[test]
fn add_and_remove_endpoint() {
    let s = Store::start();
    s.ok(&["pool", "create", "app"]);
    assert!(s.endpoints("app").is_empty());
    let ep: SocketAddr = free_addr();
    let o = s.ok(&[
        "pool",
        "add-endpoint",
        "app",
        &ep.to_string(),
        "--weight",
        "2",
    ]);
    assert!(o.contains("added to pool app"), "{o}");
    assert_eq!(s.endpoints("app"), [(ep.to_string(), Value::from(2))]);

    let (code, _, err) = s.ctl(&["pool", "add-endpoint", "app", &ep.to_string()]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!(
            "error: endpoint {ep} of pool `app` already exists"
        )),
        "{err}"
    );

    let o = s.ok(&["pool", "remove-endpoint", "app", &ep.to_string()]);
    assert!(o.contains("deleted"), "{o}");
    assert!(s.endpoints("app").is_empty());
    // Removing it again is not an error: the wanted state holds.
    let (code, _, err) = s.ctl(&["pool", "remove-endpoint", "app", &ep.to_string()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("does not exist"), "{err}");

    // IPv6 addresses travel percent-encoded in paths and are named canonically.
    s.ok(&["pool", "add-endpoint", "app", "[0:0::1]:8080"]);
    assert_eq!(
        s.endpoints("app"),
        [("[::1]:8080".to_string(), Value::Null)]
    );
    s.ok(&["pool", "remove-endpoint", "app", "[::1]:8080"]);
    assert!(s.endpoints("app").is_empty());

    s.ok(&["pool", "delete", "app"]);
    assert_eq!(s.json(&["get", "pools"]), serde_json::json!([]));
}

#[test]
fn endpoints_by_dns_name_through_ctl_and_export() {
    let s = Store::start();
    s.ok(&[
        "pool",
        "create",
        "app",
        "--endpoint",
        "api.weir.test:8080:3",
        "--endpoint",
        "_http._tcp.api.weir.test",
    ]);
    s.ok(&["pool", "add-endpoint", "app", "db.weir.test:5432"]);
    assert_eq!(
        s.endpoints("app"),
        [
            ("_http._tcp.api.weir.test".to_string(), Value::Null),
            ("api.weir.test:8080".to_string(), Value::from(3)),
            ("db.weir.test:5432".to_string(), Value::Null),
        ]
    );
    let (code, _, err) = s.ctl(&["pool", "add-endpoint", "app", "api..weir.test:80"]);
    assert_ne!(code, 0);
    assert!(err.contains("empty label"), "{err}");

    let toml = s.ok(&["export"]);
    assert!(
        toml.contains(r#"{ addr = "api.weir.test:8080", weight = 3 }"#),
        "{toml}"
    );
    assert!(
        toml.contains(r#"{ srv = "_http._tcp.api.weir.test" }"#),
        "{toml}"
    );
    let dir = tempfile::tempdir().unwrap();
    let f = write(&dir, "export.toml", &toml);
    assert_eq!(s.ok(&["apply", "-f", &f]).trim(), "no changes");

    s.ok(&["pool", "remove-endpoint", "app", "db.weir.test:5432"]);
    s.ok(&["pool", "remove-endpoint", "app", "_http._tcp.api.weir.test"]);
    assert_eq!(s.endpoints("app").len(), 1);
}

#[test]
fn pool_create_is_all_or_nothing_and_names_what_exists() {
    let s = Store::start();
    s.ok(&["pool", "create", "app", "--endpoint", "127.0.0.1:9001"]);
    let (code, _, err) = s.ctl(&["pool", "create", "app"]);
    assert_eq!((code, err.trim()), (1, "error: pool `app` already exists"));
    // The second put of the same endpoint fails; the pool is not left behind without it.
    let (code, _, err) = s.ctl(&[
        "pool",
        "create",
        "db",
        "--endpoint",
        "127.0.0.1:1",
        "--endpoint",
        "127.0.0.1:1:2",
    ]);
    assert_eq!(
        (code, err.trim()),
        (1, "error: endpoint 127.0.0.1:1 of pool `db` already exists")
    );
    let pools = s.json(&["get", "pools"]);
    assert_eq!(pools.as_array().unwrap().len(), 1, "{pools}");
}

#[test]
fn a_token_is_sent_from_a_file_or_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let token = write(&dir, "token", "s3cret\n");
    let s = Store::start_with(&["--token-file", &token]);
    let (code, _, err) = s.ctl(&["pool", "create", "app"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(
        err.contains("401") || err.to_lowercase().contains("token"),
        "{err}"
    );

    s.ok(&["--token-file", &token, "pool", "create", "app"]);
    let o = out(s
        .cmd(&["pool", "delete", "app"])
        .env("WEIR_TOKEN", "s3cret")
        .output()
        .unwrap());
    assert_eq!(o.0, 0, "{o:?}");
}

/// `weir ctl` reads a token file the way `weir run` does: bounded (a path to something
/// endless is refused at once, not read until memory runs out), and an empty one is an
/// error rather than silently no token.
#[test]
fn a_token_file_that_weir_run_would_refuse_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let empty = write(&dir, "empty", "  \n");
    let s = Store::start();
    let (code, _, err) = s.ctl(&["--token-file", &empty, "get", "pools"]);
    assert_eq!(
        (code, err.trim()),
        (1, format!("error: token file {empty} is empty").as_str())
    );
    // Reading all of it would never end; the bounded read stops past the limit.
    let (code, _, err) = s.ctl(&["--token-file", "/dev/zero", "get", "pools"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("token file /dev/zero is larger than"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_mode_refuses_config_writes_but_takes_registrations() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let w = Weir::start(
        &format!(
            "[listeners.web]\nbind = \"{listen}\"\npool = \"app\"\n[pools.app]\nendpoints = []\n"
        ),
        &[listen],
    );
    let url = format!("http://{}", w.admin);
    let ctl = |args: &[&str]| {
        out(Command::new(WEIR)
            .arg("ctl")
            .args(args)
            .env("WEIR_URL", &url)
            .output()
            .unwrap())
    };
    let (code, _, err) = ctl(&["pool", "create", "db"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.starts_with("error: the config comes from a file: "),
        "{err}"
    );

    let addr = up.addr().to_string();
    let mut reg = Command::new(WEIR)
        .args([
            "ctl", "register", "--pool", "app", "--addr", &addr, "--", "sleep", "30",
        ])
        .env("WEIR_URL", &url)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until(
        "traffic to the registered endpoint",
        Duration::from_secs(5),
        || {
            let (_, o, _) = ctl(&["get", "endpoints", "--pool", "app"]);
            o.contains(&addr)
        },
    );
    assert_eq!(client::get(listen, "/").await.unwrap().text(), "a\n");
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(reg.id() as i32, libc::SIGTERM) };
    reg.wait().unwrap();
    let (_, o, _) = ctl(&["get", "endpoints", "--pool", "app"]);
    assert!(!o.contains(&addr), "{o}");
}

#[test]
fn invalid_change_prints_the_problem_and_exits_1() {
    let s = Store::start();
    let (code, _, err) = s.ctl(&[
        "route",
        "create",
        "shop",
        "--listener",
        "nope",
        "--pool",
        "nope",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(err.contains("(field routes/shop/"), "{err}");
}

fn config(listen: SocketAddr, a: SocketAddr, b: SocketAddr, balance: &str, route: bool) -> String {
    let route = if route {
        "[routes.api]\nlistener = \"web\"\npath_prefix = \"/api\"\npool = \"app\"\n"
    } else {
        ""
    };
    format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "app"

{route}
[pools.app]
balance = "{balance}"
endpoints = [{{ addr = "{a}", weight = 3 }}, {{ addr = "{b}" }}]
max_conn = 10

[pools.app.health]
check = "none"
"#
    )
}

fn write(dir: &tempfile::TempDir, name: &str, content: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, content).unwrap();
    p.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_sends_only_the_differences() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let s = Store::start();
    let dir = tempfile::tempdir().unwrap();
    let listen = free_addr();
    let other = free_addr();
    let f = write(
        &dir,
        "a.toml",
        &config(listen, up.addr(), other, "round_robin", true),
    );

    let o = s.ok(&["apply", "-f", &f]);
    assert!(
        o.contains("5 added, 0 updated, 0 deleted (revision "),
        "{o}"
    );
    assert!(o.contains("+ pools/app\n"), "{o}");
    assert_eq!(s.ok(&["apply", "-f", &f]).trim(), "no changes");
    assert_eq!(client::get(listen, "/api/x").await.unwrap().status, 200);

    // A registered endpoint is not the file's to delete.
    let leased = free_addr().to_string();
    let mut reg = s
        .cmd(&[
            "register", "--pool", "app", "--addr", &leased, "--ttl", "5s", "--", "sleep", "30",
        ])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the registration", Duration::from_secs(5), || {
        s.endpoints("app").iter().any(|(a, _)| *a == leased)
    });
    assert_eq!(s.ok(&["apply", "-f", &f]).trim(), "no changes");

    let f = write(
        &dir,
        "b.toml",
        &config(listen, up.addr(), other, "least_conn", false),
    );
    let o = s.ok(&["apply", "-f", &f]);
    assert!(o.contains("0 added, 1 updated, 1 deleted"), "{o}");
    assert!(
        o.contains("- routes/api\n") && o.contains("~ pools/app\n"),
        "{o}"
    );
    assert!(s.endpoints("app").iter().any(|(a, _)| *a == leased));
    assert_eq!(s.json(&["get", "routes"]), serde_json::json!([]));
    assert_eq!(s.ok(&["apply", "-f", &f]).trim(), "no changes");

    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(reg.id() as i32, libc::SIGTERM) };
    reg.wait().unwrap();
}

#[test]
fn apply_refuses_an_invalid_file_and_changes_nothing() {
    let s = Store::start();
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        &dir,
        "bad.toml",
        "[listeners.web]\nbind = \"127.0.0.1:1\"\npool = \"nope\"\n",
    );
    let (code, _, err) = s.ctl(&["apply", "-f", &f]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("bad.toml:3:8: error: no pool named `nope`"),
        "{err}"
    );
    assert!(err.contains("bad.toml: 1 error"), "{err}");
    assert_eq!(s.json(&["get", "listeners"]), serde_json::json!([]));
}

#[test]
fn export_passes_weir_check() {
    let s = Store::start();
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        &dir,
        "a.toml",
        &config(free_addr(), free_addr(), free_addr(), "p2c", true),
    );
    s.ok(&["apply", "-f", &f]);
    let toml = s.ok(&["export"]);
    assert!(toml.contains("[pools.app]"), "{toml}");

    let mut check = Command::new(WEIR)
        .args(["check", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    check
        .stdin
        .take()
        .unwrap()
        .write_all(toml.as_bytes())
        .unwrap();
    let (code, stdout, stderr) = out(check.wait_with_output().unwrap());
    assert_eq!(code, 0, "{toml}\n{stderr}");
    assert!(
        stdout.contains("1 listener, 1 route, 1 pool, 2 endpoints"),
        "{stdout}"
    );

    // And applying the export back is a no-op.
    let g = write(&dir, "export.toml", &toml);
    assert_eq!(s.ok(&["apply", "-f", &g]).trim(), "no changes");
}

fn spawn_register(s: &Store, addr: &str, ttl: &str, cmd: &[&str]) -> Child {
    let mut args = vec![
        "register", "--pool", "app", "--addr", addr, "--ttl", ttl, "--",
    ];
    args.extend(cmd);
    s.cmd(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn registered(s: &Store, addr: &str) -> bool {
    s.endpoints("app").iter().any(|(a, _)| a == addr)
}

#[test]
fn register_holds_the_endpoint_while_the_command_runs() {
    let s = Store::start();
    s.ok(&["pool", "create", "app"]);
    let addr = free_addr().to_string();
    // A 2s lease outlives itself only through heartbeats.
    let child = spawn_register(&s, &addr, "2s", &["sh", "-c", "sleep 5; exit 3"]);
    let start = Instant::now();
    wait_until("the registration", Duration::from_secs(5), || {
        registered(&s, &addr)
    });
    let eps = s.json(&["get", "endpoints", "--pool", "app"]);
    assert_eq!(eps[0]["spec"]["ttl"], "2s", "{eps}");
    while start.elapsed() < Duration::from_millis(4500) {
        assert!(registered(&s, &addr), "lost after {:?}", start.elapsed());
        std::thread::sleep(Duration::from_millis(200));
    }
    let (code, _, err) = out(child.wait_with_output().unwrap());
    assert_eq!(code, 3, "the command's exit code\n{err}");
    assert!(err.contains("deregistered"), "{err}");
    assert!(!registered(&s, &addr));
}

#[test]
fn register_deregisters_and_forwards_sigterm() {
    let s = Store::start();
    s.ok(&["pool", "create", "app"]);
    let addr = free_addr().to_string();
    let child = spawn_register(&s, &addr, "10s", &["sleep", "30"]);
    wait_until("the registration", Duration::from_secs(5), || {
        registered(&s, &addr)
    });
    let start = Instant::now();
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let (code, _, err) = out(child.wait_with_output().unwrap());
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(
        code,
        128 + libc::SIGTERM,
        "sleep died of the SIGTERM\n{err}"
    );
    assert!(!registered(&s, &addr), "{err}");
}

#[test]
fn register_refuses_an_unknown_pool_without_running_the_command() {
    let s = Store::start();
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let cmd = format!("touch {}", marker.display());
    let (code, _, err) = out(s
        .cmd(&[
            "register",
            "--pool",
            "nope",
            "--addr",
            "127.0.0.1:9",
            "--",
            "sh",
            "-c",
            &cmd,
        ])
        .output()
        .unwrap());
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("error: "), "{err}");
    assert!(!marker.exists());
}

#[test]
fn register_registers_again_when_weir_forgot_the_endpoint() {
    let s = Store::start();
    s.ok(&["pool", "create", "app"]);
    let addr = free_addr().to_string();
    let child = spawn_register(&s, &addr, "1s", &["sleep", "30"]);
    wait_until("the registration", Duration::from_secs(5), || {
        registered(&s, &addr)
    });
    // An operator removes it; the next heartbeat finds it gone and registers again.
    s.ok(&["pool", "remove-endpoint", "app", &addr]);
    wait_until("the second registration", Duration::from_secs(5), || {
        registered(&s, &addr)
    });
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let (code, _, err) = out(child.wait_with_output().unwrap());
    assert_eq!(code, 128 + libc::SIGINT, "{err}");
    assert!(err.contains("registering again"), "{err}");
    assert!(!registered(&s, &addr), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificates_from_a_file_and_from_pem_files_never_show_their_key() {
    let s = Store::start();
    let dir = tempfile::tempdir().unwrap();
    let ca = weir_testkit::certs::Ca::new("weir test CA");
    let shop = ca.leaf(&["shop.test"]);
    let api = ca.leaf(&["api.test"]).write(dir.path(), "api");
    let listen = free_addr();
    let f = write(
        &dir,
        "tls.toml",
        &format!(
            "[listeners.web]\nbind = \"{listen}\"\npool = \"app\"\n[listeners.web.tls]\n\n[pools.app]\n\n[certificates.shop]\nlistener = \"web\"\ndefault = true\ncert_pem = '''\n{}'''\nkey_pem = '''\n{}'''\n",
            shop.cert_pem, shop.key_pem
        ),
    );
    let o = s.ok(&["apply", "-f", &f]);
    assert!(o.contains("+ certificates/shop\n"), "{o}");
    // Read back without its key, the certificate still compares equal to the file's.
    assert_eq!(s.ok(&["apply", "-f", &f]).trim(), "no changes");

    let cert = api.cert.display().to_string();
    let key = api.key.display().to_string();
    let args = [
        "certificate",
        "create",
        "api",
        "--listener",
        "web",
        "--cert",
        &cert,
        "--key",
        &key,
    ];
    assert!(s.ok(&args).contains("certificate api created (version "));
    let (code, _, err) = s.ctl(&args);
    assert_eq!(
        (code, err.trim()),
        (1, "error: certificate `api` already exists")
    );
    let cfg = crate::tls_kit::client(&ca.pem, &["http/1.1"], None);
    let h = crate::tls_kit::connect(&cfg, listen, Some("api.test"))
        .await
        .unwrap();
    assert_eq!(h.leaf(), api.der);
    // A key that is not the certificate's: refused at its field.
    let wrong = ca.leaf(&["api.test"]).write(dir.path(), "wrong");
    let (code, _, err) = s.ctl(&[
        "certificate",
        "create",
        "other",
        "--listener",
        "web",
        "--cert",
        &cert,
        "--key",
        &wrong.key.display().to_string(),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("(field certificates/other/key_pem)"), "{err}");

    let list = s.json(&["get", "certificates"]);
    let (va, vs) = (&list[0]["version"], &list[1]["version"]);
    let table = s.ok(&["get", "certificates"]);
    let lines: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    let (va, vs) = (va.to_string(), vs.to_string());
    assert_eq!(
        lines,
        [
            vec!["NAME", "VERSION", "LISTENER", "DEFAULT"],
            vec!["api", va.as_str(), "web", "false"],
            vec!["shop", vs.as_str(), "web", "true"],
        ]
    );
    let json = s.ok(&["get", "certificates", "-o", "json"]);
    assert!(json.contains("BEGIN CERTIFICATE") && !json.contains("PRIVATE KEY"));
    let export = s.ok(&["export"]);
    assert!(export.contains("[certificates.api]") && !export.contains("PRIVATE KEY"));

    assert_eq!(
        s.ok(&["certificate", "delete", "api"]).trim(),
        "certificate api deleted"
    );
    let h = crate::tls_kit::connect(&cfg, listen, Some("shop.test"))
        .await
        .unwrap();
    assert_eq!(h.leaf(), shop.der);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_pool_made_with_ctl_serves_calls_and_a_bad_protocol_names_its_field() {
    let up = weir_testkit::grpc::GrpcUpstream::spawn("g").await.unwrap();
    let s = Store::start();
    let ep = up.addr().to_string();
    let (code, _, err) = s.ctl(&[
        "pool",
        "create",
        "grpc",
        "--endpoint",
        &ep,
        "--protocol",
        "http2",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("protocol") && err.contains("http2"), "{err}");
    s.ok(&[
        "pool",
        "create",
        "grpc",
        "--endpoint",
        &ep,
        "--protocol",
        "h2c",
        "--health",
        "grpc",
        "--interval",
        "300ms",
        "--timeout",
        "250ms",
    ]);
    let listen = free_addr();
    s.ok(&[
        "listener",
        "create",
        "web",
        "--bind",
        &listen.to_string(),
        "--pool",
        "grpc",
    ]);
    let deadline = Instant::now() + Duration::from_secs(20);
    let reply = loop {
        let call = async {
            let mut c = weir_testkit::grpc::grpc_client(listen).await.ok()?;
            let req = weir_testkit::grpc::EchoRequest {
                message: "via ctl".into(),
                ..Default::default()
            };
            c.unary(req).await.ok()
        };
        match call.await {
            Some(r) => break r.into_inner(),
            None if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            None => panic!("no answer through the listener made with ctl"),
        }
    };
    assert_eq!(
        (reply.message.as_str(), reply.server.as_str()),
        ("via ctl", "g")
    );
    let pools = s.json(&["get", "pools"]);
    assert_eq!(pools[0]["spec"]["protocol"], "h2c", "{pools}");
    assert_eq!(pools[0]["spec"]["health"]["check"], "grpc", "{pools}");
    while up.health_checks() == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(up.health_checks() > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_and_get_carry_route_filters() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let s = Store::start();
    let dir = tempfile::tempdir().unwrap();
    let listen = free_addr();
    let file = |addresses: &str| {
        format!(
            r#"
[listeners.web]
bind = "{listen}"

[pools.app]
endpoints = [{{ addr = "{}" }}]

[filters.office]
kind = "ip_allow"
addresses = {addresses}

[routes.all]
listener = "web"
pool = "app"
filters = ["office"]
"#,
            up.addr()
        )
    };
    let f = write(&dir, "a.toml", &file("[\"192.0.2.0/24\"]"));
    let o = s.ok(&["apply", "-f", &f]);
    assert!(o.contains("+ filters/office\n"), "{o}");
    assert_eq!(client::get(listen, "/").await.unwrap().status, 403);
    let table = s.ok(&["get", "filters"]);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("office ") && l.ends_with("ip_allow")),
        "{table}"
    );
    let routes = s.ok(&["get", "routes"]);
    assert!(
        routes.contains("FILTERS") && routes.contains("[\"office\"]"),
        "{routes}"
    );
    assert_eq!(s.ok(&["apply", "-f", &f]).trim(), "no changes");

    // Changing the filter is one update, and the next request sees it.
    let f = write(&dir, "b.toml", &file("[\"127.0.0.0/8\"]"));
    let o = s.ok(&["apply", "-f", &f]);
    assert!(
        o.contains("0 added, 1 updated, 0 deleted") && o.contains("~ filters/office\n"),
        "{o}"
    );
    assert_eq!(client::get(listen, "/").await.unwrap().status, 200);
}
