//! The etcd harness against the real etcd: clusters start, serve, survive losing a member
//! and take it back.

use weir_testkit::etcd::Etcd;

#[test]
fn one_member_puts_gets_and_compacts() {
    let etcd = Etcd::start(1);
    assert_eq!(etcd.endpoints().len(), 1);
    let ep = &etcd.endpoints()[0];
    assert_eq!(etcd.client_urls(), vec![format!("http://{ep}")]);
    assert_eq!(etcd.url("/weir/"), format!("etcd://{ep}/weir/"));

    assert_eq!(etcd.get("/weir/a"), None);
    etcd.put("/weir/a", "one");
    etcd.put("/weir/empty", "");
    // Keys and values that look like flags reach etcd as data.
    etcd.put("-k", "-v");
    assert_eq!(etcd.get("/weir/a").as_deref(), Some("one"));
    assert_eq!(etcd.get("/weir/empty").as_deref(), Some(""));
    assert_eq!(etcd.get("-k").as_deref(), Some("-v"));

    // Three puts after the initial revision 1.
    assert_eq!(etcd.compact(), 4);
    assert_eq!(etcd.get("/weir/a").as_deref(), Some("one"));
}

#[test]
fn three_members_survive_losing_one_and_take_it_back() {
    let mut etcd = Etcd::start(3);
    let eps = etcd.endpoints();
    assert_eq!(eps.len(), 3);
    assert_eq!(etcd.url("weir"), format!("etcd://{}/weir", eps.join(",")));

    etcd.put("k", "before");
    assert_eq!(etcd.get("k").as_deref(), Some("before"));

    // m0 may be the leader: the other two elect one of themselves, then serve.
    etcd.kill(0);
    etcd.wait_healthy();
    etcd.put("k", "during");
    assert_eq!(etcd.get("k").as_deref(), Some("during"));

    // Back on its old ports and data, it catches up with what it missed.
    etcd.restart(0);
    etcd.kill(1);
    etcd.kill(2);
    etcd.restart(1);
    assert_eq!(etcd.get("k").as_deref(), Some("during"));
    etcd.restart(2);
    etcd.put("k", "after");
    assert_eq!(etcd.get("k").as_deref(), Some("after"));
}

/// etcdctl against a member, with the flags given and nothing of the harness's.
fn etcdctl(endpoint: &str, flags: &[&str], args: &[&str]) -> std::process::Output {
    std::process::Command::new("/usr/bin/etcdctl")
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", endpoint, "--dial-timeout", "10s"])
        .args(flags)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_tls_member_wants_its_ca_and_a_client_certificate_and_with_auth_a_password() {
    let mut etcd = Etcd::builder(1).client_cert_auth().start();
    let ep = &etcd.endpoints()[0];
    let url = format!("https://{ep}");
    assert_eq!(etcd.client_urls(), vec![url.clone()]);
    assert_eq!(etcd.url("weir"), format!("etcd://{ep}/weir"));
    let t = etcd.tls().unwrap().clone();
    assert!(t.client_cert_auth);
    let (ca, cert, key) = (
        t.ca.to_str().unwrap(),
        t.client.cert.to_str().unwrap(),
        t.client.key.to_str().unwrap(),
    );
    etcd.put("/weir/a", "one");
    assert_eq!(etcd.get("/weir/a").as_deref(), Some("one"));
    // The harness's etcdctl passes the CA and the certificate; without them etcd refuses.
    let tls = ["--cacert", ca, "--cert", cert, "--key", key];
    assert!(etcdctl(&url, &tls, &["get", "/weir/a"]).status.success());
    assert!(!etcdctl(&url, &["--cacert", ca], &["get", "/weir/a"])
        .status
        .success());
    assert!(!etcdctl(&format!("http://{ep}"), &[], &["get", "/weir/a"])
        .status
        .success());

    etcd.enable_auth("root-secret");
    etcd.add_user("weir", "weir-secret", "/weir/");
    // The harness logs in as root from now on.
    etcd.put("/other", "x");
    assert_eq!(etcd.get("/weir/a").as_deref(), Some("one"));
    // Without a user, etcd takes the certificate's CN (`weir`), allowed /weir/ only.
    assert!(etcdctl(&url, &tls, &["get", "/weir/a"]).status.success());
    assert!(!etcdctl(&url, &tls, &["put", "/other", "y"])
        .status
        .success());
    let user = [&tls[..], &["--user", "weir:weir-secret"]].concat();
    assert!(etcdctl(&url, &user, &["put", "/weir/b", "two"])
        .status
        .success());
    let wrong = [&tls[..], &["--user", "weir:nope"]].concat();
    assert!(!etcdctl(&url, &wrong, &["get", "/weir/a"]).status.success());

    // Back on its data (auth still on): the readiness check logs in too.
    etcd.restart(0);
    assert_eq!(etcd.get("/weir/b").as_deref(), Some("two"));
}

#[test]
fn auth_on_a_plain_member_and_a_restart() {
    let mut etcd = Etcd::builder(1).auth_token_ttl(1).start();
    etcd.enable_auth("root-secret");
    let url = etcd.client_urls()[0].clone();
    assert!(url.starts_with("http://"));
    assert!(!etcdctl(&url, &[], &["put", "k", "v"]).status.success());
    etcd.put("k", "v");
    etcd.kill(0);
    etcd.restart(0);
    assert_eq!(etcd.get("k").as_deref(), Some("v"));
}
