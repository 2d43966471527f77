//! `weir check`: every error at its line and column, exit codes, stdin.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::common::WEIR;

/// `weir check` on `content` in a file: (exit code, stdout, stderr), the file named
/// `weir.toml` in both.
pub fn check_file(content: &str) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.toml");
    std::fs::write(&path, content).unwrap();
    let out = Command::new(WEIR).arg("check").arg(&path).output().unwrap();
    let stderr =
        String::from_utf8_lossy(&out.stderr).replace(&*path.to_string_lossy(), "weir.toml");
    let stdout =
        String::from_utf8_lossy(&out.stdout).replace(&*path.to_string_lossy(), "weir.toml");
    (out.status.code().unwrap_or(-1), stdout, stderr)
}

#[test]
fn reports_all_five_errors_with_line_and_column() {
    let cfg = r#"[listeners.web]
bnd = "0.0.0.0:8080"
pool = "app"

[listeners.api]
bind = "127.0.0.1:99999"

[routes.shop]
listener = "web"
pool = "ap"

[pools.app]
endpoints = [{ addr = "127.0.0.1:9001", weight = 0 }]
connect_timeout = "5 seconds"
"#;
    let (code, _out, err) = check_file(cfg);
    assert_eq!(code, 1, "{err}");
    for want in [
        "weir.toml:2:1: error: unknown key `bnd`, did you mean `bind`?",
        "weir.toml:6:8: error:",
        "weir.toml:10:8: error:",
        "weir.toml:13:50: error: weight = 0 is out of range",
        "weir.toml:14:19: error:",
    ] {
        assert!(err.contains(want), "missing {want:?} in:\n{err}");
    }
    assert!(err.contains("did you mean `app`?"), "{err}");
    assert!(err.contains("weir.toml: 5 errors"), "{err}");
    assert!(err.contains("   10 | pool = \"ap\""), "{err}");
}

#[test]
fn valid_file_exits_zero_with_a_summary() {
    let (code, out, err) = check_file(
        "[listeners.web]\nbind = \"127.0.0.1:8080\"\npool = \"app\"\n[pools.app]\nendpoints = [{ addr = \"127.0.0.1:9001\" }]\n",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.trim(),
        "weir.toml: ok (1 listener, 0 routes, 1 pool, 1 endpoint)"
    );
}

#[test]
fn shipped_examples_are_valid() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    // https.toml names certs/localhost.{pem,key} from the working directory: made as its
    // comment says, with `weir cert`.
    let cwd = tempfile::tempdir().unwrap();
    let made = Command::new(WEIR)
        .args(["cert", "localhost", "127.0.0.1"])
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    // A name that is neither a DNS name nor an address is refused, and nothing is written.
    let bad = Command::new(WEIR)
        .args(["cert", "not a name!", "--out", "bad"])
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("is not a DNS name"));
    assert!(!cwd.path().join("bad").exists());
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = std::fs::canonicalize(e.unwrap().path()).unwrap();
        if p.extension().is_some_and(|x| x == "toml") {
            let out = Command::new(WEIR)
                .arg("check")
                .arg(&p)
                .current_dir(cwd.path())
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}: {}",
                p.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            n += 1;
        }
    }
    assert!(n >= 4);
}

#[test]
fn reads_standard_input() {
    let mut child = Command::new(WEIR)
        .args(["check", "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"[listeners.web]\nbind = \"nope\"\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("-:2:8: error:"), "{err}");
}
