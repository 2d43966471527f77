//! The command line as a new user meets it: a mistake gets what to type instead, and
//! nothing is overwritten or taken without a word.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::WEIR;

/// `weir ARGS` in `cwd` to its end: (exit code, stdout, stderr).
fn weir(args: &[&str], cwd: &Path) -> (i32, String, String) {
    let out = Command::new(WEIR)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `weir run FILE`, as `nginx -c` users and `weir check FILE` suggest: a usage error that
/// shows the command with `-c`, and nothing started (no store made in the working directory).
#[test]
fn run_with_a_file_but_without_c_says_to_give_it_with_c() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = weir(&["run", "weir.toml"], dir.path());
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("weir run -c weir.toml"), "{err}");
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}

/// `--threads 0` would start no worker: refused by `run` and `demo` before anything starts,
/// saying what is allowed.
#[test]
fn zero_threads_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    // `-c` names no file: were `--threads 0` taken, the error would be about the file.
    let (code, _, err) = weir(&["run", "--threads", "0", "-c", "missing.toml"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("invalid value '0' for '--threads <N>'") && err.contains("at least 1"),
        "{err}"
    );
    // The same for the demo (its `--listen` is bad too: the first error is the threads').
    let (code, _, err) = weir(
        &["demo", "--threads", "0", "--listen", "nowhere"],
        dir.path(),
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("at least 1"), "{err}");
}

/// A `weir cert --force` that cannot write one file of the pair (here the key's path is a
/// directory) changes neither: the pair in place still matches, rather than a new
/// certificate beside the old key, which no listener could load.
#[test]
fn a_forced_cert_that_fails_halfway_leaves_the_pair_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = weir(&["cert", "localhost"], dir.path());
    assert_eq!(code, 0, "{out}{err}");
    let key = dir.path().join("certs/localhost.key");
    let cert = dir.path().join("certs/localhost.pem");
    let cert0 = std::fs::read(&cert).unwrap();
    std::fs::remove_file(&key).unwrap();
    std::fs::create_dir(&key).unwrap();
    std::fs::write(key.join("keep"), "a directory in the key's place").unwrap();

    let (code, out, err) = weir(&["cert", "localhost", "--force"], dir.path());
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("certs/localhost.key"), "{err}");
    assert!(
        std::fs::read(&cert).unwrap() == cert0,
        "the certificate was replaced"
    );
    assert!(key.join("keep").exists());
    // Nothing left behind beside the pair.
    let names: Vec<String> = std::fs::read_dir(dir.path().join("certs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

/// A second `weir cert` for the same name keeps the first pair (a key in use is not lost to
/// a repeated command) and says how to replace it; `--force` replaces both files.
#[test]
fn cert_keeps_an_existing_pair_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = weir(&["cert", "localhost"], dir.path());
    assert_eq!(code, 0, "{out}{err}");
    let key = dir.path().join("certs/localhost.key");
    let cert = dir.path().join("certs/localhost.pem");
    let (key0, cert0) = (std::fs::read(&key).unwrap(), std::fs::read(&cert).unwrap());

    let (code, out, err) = weir(&["cert", "localhost", "127.0.0.1"], dir.path());
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("certs/localhost.key already exists") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read(&key).unwrap(), key0);
    assert_eq!(std::fs::read(&cert).unwrap(), cert0);

    // Only the certificate left: still refused, and the key is not written alone.
    std::fs::remove_file(&key).unwrap();
    let (code, _, err) = weir(&["cert", "localhost"], dir.path());
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("certs/localhost.pem already exists"), "{err}");
    assert!(!key.exists());

    let (code, out, err) = weir(&["cert", "localhost", "--force"], dir.path());
    assert_eq!(code, 0, "{out}{err}");
    assert_ne!(std::fs::read(&cert).unwrap(), cert0);
    assert!(key.exists());
}
