//! Config input read within bounds: whatever the config input, weir reads a bounded amount of it and
//! prints a bounded report; invalid UTF-8 and unusable token files are reported where they
//! are, by `weir check` and `weir run` alike.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use weir_testkit::{client, HttpUpstream};

use crate::common::{endpoints, free_addr, one_pool, Weir, WEIR};

/// The documented limit (docs/CONFIG.md): 16 MiB.
const LIMIT: usize = 16 << 20;

/// Runs `cmd` to its end with stdout and stderr in files (a report of any size cannot block
/// it), killing it if it outlives `timeout`: an unbounded read would otherwise never end.
/// Its address space is capped at 4 GiB, so that a weir that reads without bound fails
/// here instead of growing until the OOM killer picks some process of the machine.
fn run(cmd: &mut Command, timeout: Duration) -> (i32, String, String) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit(2) is async-signal-safe; the closure allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            let cap = libc::rlimit {
                rlim_cur: 4 << 30,
                rlim_max: 4 << 30,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &cap) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = cmd
        .stdout(File::create(&out).unwrap())
        .stderr(File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} still running after {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    (status.code().unwrap_or(-1), read(&out), read(&err))
}

fn check(path: &Path) -> (i32, String, String) {
    run(
        Command::new(WEIR)
            .arg("check")
            .arg(path)
            .stdin(Stdio::null()),
        Duration::from_secs(30),
    )
}

/// One pool whose endpoints line holds `n` bad addresses: `n` errors on one line.
fn many_errors(n: usize) -> String {
    let items = vec![r#"{addr="x"}"#; n].join(",");
    format!("[pools.app]\nendpoints = [{items}]\n")
}

/// Each rendered diagnostic's source line and caret line (the two lines after its header).
fn excerpts(report: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = report.lines().collect();
    lines
        .windows(3)
        .filter(|w| w[0].contains(": error: ") || w[0].contains(": warning: "))
        .map(|w| {
            let strip = |l: &str| l.split_once(" | ").map(|(_, t)| t.to_owned()).unwrap();
            (strip(w[1]), strip(w[2]))
        })
        .collect()
}

/// The text of `source` under the carets of `caret`, counted in chars.
fn under_caret(source: &str, caret: &str) -> String {
    let at = caret.chars().take_while(|&c| c != '^').count();
    let width = caret.chars().filter(|&c| c == '^').count();
    source.chars().skip(at).take(width).collect()
}

#[test]
fn a_thousand_errors_on_one_long_line_print_the_first_hundred_cut_around_the_caret() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.toml");
    std::fs::write(&path, many_errors(1000)).unwrap();
    let (code, _, err) = check(&path);
    assert_eq!(code, 1);
    // Each of the 1000 used to repeat the whole 11 KB line: 11 MB of report.
    assert!(err.len() < 64 * 1024, "{} bytes of report", err.len());
    let shown = excerpts(&err);
    assert_eq!(shown.len(), 100, "{err}");
    assert!(
        err.contains("... and 900 more errors not shown"),
        "{}",
        &err[err.len().saturating_sub(500)..]
    );
    assert!(
        err.ends_with(": 1000 errors\n"),
        "{}",
        &err[err.len() - 200..]
    );
    for (source, caret) in &shown {
        assert!(source.chars().count() <= 130, "{source}");
        assert_eq!(under_caret(source, caret), r#""x""#, "{source}\n{caret}");
    }
    // The first is near the start of the line: cut only at its end. Later ones are cut
    // on both sides, and still name their true column.
    assert!(!shown[0].0.starts_with("...") && shown[0].0.ends_with("..."));
    assert!(shown[99].0.starts_with("...") && shown[99].0.ends_with("..."));
    assert!(
        err.contains(":2:1109: error: invalid address \"x\""),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_with_many_errors_logs_a_bounded_report() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );
    let from = w.log_lines();
    assert!(w.reload(&many_errors(1000)).contains("reload rejected"));
    w.wait_log(
        from,
        "... and 900 more errors not shown",
        Duration::from_secs(5),
    );
    let report: Vec<String> = w.log_text().lines().skip(from).map(str::to_owned).collect();
    let report = report.join("\n");
    // Each of the 1000 errors used to repeat the whole 11 KB line.
    assert!(report.len() < 64 * 1024, "{} bytes of log", report.len());
    assert_eq!(client::get(listen, "/").await.unwrap().status, 200);
}

#[test]
fn warnings_are_capped_like_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.toml");
    // 130 tcp listeners, each with an http-only setting: a warning each, no error.
    let mut cfg = String::from("[pools.app]\n");
    for i in 0..130 {
        cfg += &format!(
            "[listeners.l{i}]\nbind = \"127.0.0.1:{}\"\nprotocol = \"tcp\"\npool = \"app\"\nheader_timeout = \"1s\"\n",
            20000 + i
        );
    }
    std::fs::write(&path, cfg).unwrap();
    let (code, out, err) = check(&path);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(": ok (130 listeners"), "{out}");
    assert_eq!(excerpts(&err).len(), 100);
    assert!(
        err.contains("... and 30 more warnings not shown (only the first 100 are)"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_change_with_many_errors_lists_the_first_hundred_and_counts_the_rest() {
    use crate::api_client::{call, json};
    let data = tempfile::tempdir().unwrap();
    let w = Weir::store(data.path());
    let changes: Vec<serde_json::Value> = (0..150)
        .map(|i| {
            serde_json::json!({"op": "put", "path": format!("pools/p{i:03}"), "if_none_match": "*",
                "spec": {"balance": "fastest"}})
        })
        .collect();
    let r = call(
        w.admin,
        "POST",
        "transaction",
        &[],
        Some(serde_json::json!({ "changes": changes })),
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text());
    let p = json(&r);
    let errors = p["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 101, "{p}");
    assert_eq!(errors[0]["field"], "pools/p000/balance");
    assert_eq!(
        errors[100]["message"],
        "... and 50 more errors not shown (only the first 100 are)"
    );
    assert!(errors[100].get("field").is_none(), "{p}");
}

#[test]
fn dev_zero_is_refused_after_the_limit() {
    let (code, _, err) = check(Path::new("/dev/zero"));
    assert_eq!(code, 1);
    assert!(
        err.contains("/dev/zero: larger than 16 MiB (16777216 bytes)"),
        "{err}"
    );
}

#[test]
fn standard_input_is_read_up_to_the_limit_only() {
    let (code, _, err) = run(
        Command::new(WEIR)
            .args(["check", "-"])
            .stdin(File::open("/dev/zero").unwrap()),
        Duration::from_secs(30),
    );
    assert_eq!(code, 1);
    assert!(err.contains("-: larger than 16 MiB"), "{err}");
}

#[test]
fn a_fifo_is_read_up_to_the_limit_only() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("weir.toml");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) on a NUL-terminated path in our own temp dir.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // A writer that never stops on its own: it ends when weir closes the FIFO (EPIPE).
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
            let chunk = vec![b'#'; 64 * 1024];
            while f.write_all(&chunk).is_ok() {}
        })
    };
    let (code, _, err) = check(&fifo);
    assert_eq!(code, 1);
    assert!(err.contains("weir.toml: larger than 16 MiB"), "{err}");
    writer.join().unwrap();
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) on a NUL-terminated path in our own temp dir.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// A FIFO nothing writes to would block a reader forever: `weir check` waits a bounded
/// time for a writer (docs/CONFIG.md), then refuses it, naming it and why. The same bound
/// holds for a token file.
#[test]
fn a_fifo_without_a_writer_is_refused_after_a_bounded_wait() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("weir.toml");
    mkfifo(&fifo);
    let started = Instant::now();
    let (code, _, err) = check(&fifo);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!(
            "{}: cannot read: nothing was written to this FIFO for 10 s",
            fifo.display()
        )),
        "{err}"
    );
    assert!(started.elapsed() >= Duration::from_secs(10));

    // (In a directory of its own: its config is `weir.toml` too.)
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    mkfifo(&token);
    let path = with_token_file(dir.path(), &token);
    let (code, _, err) = check(&path);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!(
            "{}:2:1: error: token file {}: nothing was written to this FIFO for 10 s",
            path.display(),
            token.display()
        )),
        "{err}"
    );
}

/// A writer that comes after weir began to wait is read in full.
#[test]
fn a_fifo_whose_writer_comes_later_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("weir.toml");
    mkfifo(&fifo);
    let child = Command::new(WEIR)
        .arg("check")
        .arg(&fifo)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Opening for writing blocks until weir has it open for reading: weir is waiting.
    let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    use std::io::Write;
    w.write_all(b"[listeners.web]\nbind = \"127.0.0.1:8080\"\npool = \"app\"\n")
        .unwrap();
    w.write_all(b"[pools.app]\nendpoints = [{ addr = \"127.0.0.1:9001\" }]\n")
        .unwrap();
    drop(w);
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("ok (1 listener, 0 routes, 1 pool, 1 endpoint)"),
        "{stdout}"
    );
}

/// Just over the limit: 17 MiB of comments, which would be a valid (empty) config.
fn over_the_limit_text() -> String {
    let text = format!("#{}\n", "x".repeat(1023)).repeat(17 * 1024);
    assert!(text.len() > LIMIT);
    text
}

fn over_the_limit(path: &Path) {
    std::fs::write(path, over_the_limit_text()).unwrap();
}

#[test]
fn a_file_over_sixteen_mib_is_refused_with_its_name_and_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.toml");
    over_the_limit(&path);
    let (code, out, err) = check(&path);
    assert_eq!(code, 1, "{out}");
    assert!(
        err.contains(&format!(
            "{}: larger than 16 MiB (16777216 bytes), the most weir reads from a config file",
            path.display()
        )),
        "{err}"
    );
}

#[test]
fn weir_run_refuses_a_file_over_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.toml");
    over_the_limit(&path);
    let mut w = Weir::command(&["run", "-c", path.to_str().unwrap()], &[]);
    assert!(!w.wait_exit(Duration::from_secs(30)).success());
    assert!(
        w.log_text().contains("big.toml: larger than 16 MiB"),
        "{}",
        w.log_text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_over_the_limit_is_rejected_and_the_old_config_keeps_serving() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );
    let from = w.log_lines();
    assert!(w.reload(&over_the_limit_text()).contains("reload rejected"));
    w.wait_log(
        from,
        "weir.toml: larger than 16 MiB",
        Duration::from_secs(5),
    );
    assert_eq!(client::get(listen, "/").await.unwrap().status, 200);
}

#[test]
fn ctl_apply_reads_at_most_the_limit() {
    // The file is read before weir is asked anything, so no weir needs to run.
    let url = format!("http://{}", free_addr());
    let (code, _, err) = run(
        Command::new(WEIR)
            .args(["ctl", "--url", &url, "apply", "-f", "/dev/zero"])
            .stdin(Stdio::null()),
        Duration::from_secs(30),
    );
    assert_eq!(code, 1);
    assert!(err.contains("/dev/zero: larger than 16 MiB"), "{err}");
    let (code, _, err) = run(
        Command::new(WEIR)
            .args(["ctl", "--url", &url, "apply", "-f", "-"])
            .stdin(File::open("/dev/zero").unwrap()),
        Duration::from_secs(30),
    );
    assert_eq!(code, 1);
    assert!(err.contains("-: larger than 16 MiB"), "{err}");
}

#[test]
fn invalid_utf8_is_reported_at_its_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.toml");
    std::fs::write(&path, b"[listeners.web]\nbind = \"127.0.0.1:80\xff\"\n").unwrap();
    let (code, _, err) = check(&path);
    assert_eq!(code, 1);
    let at = format!("{}:2:21: error: invalid UTF-8", path.display());
    assert!(err.contains(&at), "{err}");
    // The line is shown with the bad byte replaced, the caret under it.
    let shown = excerpts(&err);
    assert_eq!(under_caret(&shown[0].0, &shown[0].1), "\u{fffd}", "{err}");

    // `weir run` says the same.
    let mut w = Weir::command(&["run", "-c", path.to_str().unwrap()], &[]);
    assert!(!w.wait_exit(Duration::from_secs(10)).success());
    assert!(w.log_text().contains(&at), "{}", w.log_text());
}

/// `weir check` reports `msg` at the `token_file` key (2:1) and `weir run` refuses to start
/// with it: one rule for both.
fn refused_by_check_and_run(path: &Path, msg: &str) {
    let (code, _, err) = check(path);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!("{}:2:1: error: {msg}", path.display())),
        "{err}"
    );
    let mut w = Weir::command(&["run", "-c", path.to_str().unwrap()], &[]);
    assert!(!w.wait_exit(Duration::from_secs(10)).success());
    assert!(w.log_text().contains(msg), "{}", w.log_text());
}

/// `[admin] token_file` on line 2, its key at column 1.
fn with_token_file(dir: &Path, token: &Path) -> std::path::PathBuf {
    let path = dir.join("weir.toml");
    let admin = free_addr();
    std::fs::write(
        &path,
        format!(
            "[admin]\ntoken_file = {:?}\nlisten = \"{admin}\"\n",
            token.display().to_string()
        ),
    )
    .unwrap();
    path
}

#[test]
fn an_empty_token_file_is_an_error_for_check_as_for_run() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, " \n").unwrap();
    let path = with_token_file(dir.path(), &token);
    refused_by_check_and_run(&path, &format!("token file {} is empty", token.display()));
}

#[test]
fn an_unreadable_token_file_is_an_error_for_check_as_for_run() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("missing-token");
    let path = with_token_file(dir.path(), &token);
    refused_by_check_and_run(&path, &format!("token file {}: ", token.display()));

    // And a readable one passes both.
    std::fs::write(&token, "s3cret\n").unwrap();
    let (code, out, err) = check(&path);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn a_token_file_over_4_kib_is_an_error_for_check_as_for_run() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "a".repeat(4097)).unwrap();
    let path = with_token_file(dir.path(), &token);
    refused_by_check_and_run(
        &path,
        &format!("token file {} is larger than 4096 bytes", token.display()),
    );
}

#[test]
fn thousands_of_references_to_missing_pools_make_a_short_report() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.toml");
    let mut cfg = String::from("[listeners.web]\nbind = \"127.0.0.1:8080\"\n");
    for i in 0..2000 {
        cfg += &format!(
            "[pools.p{i}]\n[routes.r{i}]\nlistener = \"web\"\npath_prefix = \"/r{i}\"\npool = \"zzzz{i}\"\n"
        );
    }
    std::fs::write(&path, cfg).unwrap();
    let (code, _, err) = check(&path);
    assert_eq!(code, 1);
    // Each message named all 2000 pools: 2000 × 13 KB.
    assert!(err.len() < 64 * 1024, "{} bytes of report", err.len());
    assert!(
        err.contains("error: no pool named `zzzz0` (defined pools: p0, p1, p10, p100, p1000, p1001, p1002, p1003, p1004, p1005, and 1990 more)"),
        "{}",
        &err[..1000]
    );
    assert!(err.contains("... and 1900 more errors not shown"), "{err}");
}
