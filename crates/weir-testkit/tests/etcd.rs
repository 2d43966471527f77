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
