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

/// A file with nothing in it (or only comments) is refused, as `nginx -t` refuses a config
/// without its required blocks: at 1:1, saying what a config needs and where to start. `weir
/// run -c` refuses it too.
#[test]
fn an_empty_file_is_an_error_that_says_what_is_missing() {
    for content in ["", "# nothing here yet\n\n"] {
        let (code, out, err) = check_file(content);
        assert_eq!(code, 1, "{content:?}: {out}{err}");
        assert!(
            err.contains("weir.toml:1:1: error: the file is empty")
                && err.contains("[listeners.NAME]")
                && err.contains("examples/basic.toml"),
            "{content:?}: {err}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.toml");
    std::fs::write(&path, "").unwrap();
    let mut w = crate::common::Weir::command(&["run", "-c", path.to_str().unwrap()], &[]);
    assert!(!w.wait_exit(std::time::Duration::from_secs(10)).success());
    assert!(
        w.log_text().contains("the file is empty"),
        "{}",
        w.log_text()
    );

    // A running weir whose file is emptied (a truncated write) keeps its config.
    let listen = crate::common::free_addr();
    let mut w = crate::common::Weir::start(
        &crate::common::one_pool(listen, "endpoints = [{ addr = \"127.0.0.1:9\" }]", ""),
        &[listen],
    );
    let outcome = w.reload("");
    assert!(outcome.contains("reload rejected"), "{outcome}");
    assert!(
        w.log_text().contains("the file is empty"),
        "{}",
        w.log_text()
    );
    w.wait_listening(listen);
}

/// A file that defines things but no listener is valid (it may be on its way), and says that
/// it accepts nothing.
#[test]
fn a_file_without_listeners_gets_a_warning() {
    let (code, out, err) = check_file("[pools.app]\nendpoints = [{ addr = \"127.0.0.1:9001\" }]\n");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("weir.toml:1:1: warning: no listeners: weir accepts no connections"),
        "{err}"
    );
}

/// Both files of a certificate pair are reported when both are missing, each at its key.
#[test]
fn a_missing_key_file_is_reported_as_a_missing_certificate_file_is() {
    let cfg = r#"[listeners.web]
bind = "127.0.0.1:8443"
pool = "app"

[listeners.web.tls]
certificates = [{ cert = "nope.pem", key = "nope.key", default = true }]

[pools.app]
endpoints = [{ addr = "127.0.0.1:9001" }]
"#;
    let (code, _, err) = check_file(cfg);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("weir.toml:6:26: error: cannot read nope.pem: No such file"),
        "{err}"
    );
    assert!(
        err.contains("weir.toml:6:44: error: cannot read nope.key: No such file"),
        "{err}"
    );
    assert!(err.contains("weir.toml: 2 errors"), "{err}");

    // A missing key beside a readable certificate: at the key.
    let dir = tempfile::tempdir().unwrap();
    let made = Command::new(WEIR)
        .args(["cert", "localhost"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(made.status.success());
    let pem = dir.path().join("certs/localhost.pem").display().to_string();
    let (code, _, err) = check_file(&cfg.replace("nope.pem", &pem));
    assert_eq!(code, 1, "{err}");
    let col = 26 + pem.len() + 2 + 8;
    assert!(
        err.contains(&format!("weir.toml:6:{col}: error: cannot read nope.key")),
        "{err}"
    );
    assert!(err.contains("weir.toml: 1 error"), "{err}");
}

/// An nginx config given to weir: the first thing said is that weir reads TOML, at the first
/// line in nginx's syntax, with where to start from.
#[test]
fn an_nginx_config_gets_a_hint_that_weir_reads_toml() {
    let (code, _, err) = check_file(
        "# my site\nupstream app {\n    server 127.0.0.1:9001;\n}\nserver {\n    listen 8080;\n    location / {\n        proxy_pass http://app;\n    }\n}\n",
    );
    assert_eq!(code, 1, "{err}");
    let first = err.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("weir.toml:2:1: error: this looks like nginx configuration")
            && first.contains("weir reads TOML")
            && first.contains("examples/")
            && first.contains("docs/CONFIG.md"),
        "{err}"
    );
}

/// The same for YAML, at the first `key:` line.
#[test]
fn a_yaml_file_gets_a_hint_that_weir_reads_toml() {
    let (code, _, err) = check_file(
        "listeners:\n  web:\n    bind: \"127.0.0.1:8080\"\n    pool: app\npools:\n  app:\n    endpoints:\n      - addr: 127.0.0.1:9001\n",
    );
    assert_eq!(code, 1, "{err}");
    let first = err.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("weir.toml:1:1: error: this looks like YAML")
            && first.contains("weir reads TOML")
            && first.contains("key = value")
            && first.contains("docs/CONFIG.md"),
        "{err}"
    );
}

/// A TOML file with a TOML mistake gets no such hint.
#[test]
fn a_toml_mistake_gets_no_format_hint() {
    let (code, _, err) = check_file("[listeners.web]\nbind = \"127.0.0.1:8080\nbind2 = 1\n");
    assert_eq!(code, 1, "{err}");
    assert!(!err.contains("looks like"), "{err}");
}
