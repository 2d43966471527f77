//! Repository semantics of docs/DESIGN.md §3: add / update / delete, every CommitError,
//! validation against the whole resulting state, batches, versions, notifications.

mod common;

use common::*;
use serde_json::json;
use weir_store::{
    endpoint_name, CommitError, Committed, Kind, Precondition::*, State, Store, Versioned,
};

#[test]
fn add_get_update_delete() {
    let (_dir, store) = open_tmp();
    assert_eq!(store.state().unwrap(), State::default());

    let c = store
        .commit(put(Kind::Pool, "app", pool("round_robin"), Absent), any)
        .unwrap();
    assert_eq!(
        c,
        Committed {
            version: 1,
            revision: 1
        }
    );
    assert_eq!(
        store.get(Kind::Pool, "app").unwrap(),
        Some(Versioned {
            version: 1,
            body: pool("round_robin").into()
        })
    );
    // Same name, other kind: a different resource.
    assert_eq!(store.get(Kind::Listener, "app").unwrap(), None);

    let c = store
        .commit(put(Kind::Pool, "app", pool("p2c"), Version(1)), any)
        .unwrap();
    assert_eq!(
        c,
        Committed {
            version: 2,
            revision: 2
        }
    );
    assert_eq!(
        *store.get(Kind::Pool, "app").unwrap().unwrap().body,
        pool("p2c")
    );

    let c = store
        .commit(del(Kind::Pool, "app", Version(2)), any)
        .unwrap();
    assert_eq!(
        c,
        Committed {
            version: 0,
            revision: 3
        }
    );
    assert_eq!(store.get(Kind::Pool, "app").unwrap(), None);
    let state = store.state().unwrap();
    assert_eq!(state.revision, 3);
    assert!(state.resources.is_empty());
}

#[test]
fn every_commit_error_and_nothing_changes() {
    let (_dir, store) = open_tmp();
    store
        .commit(put(Kind::Pool, "app", pool("random"), Absent), any)
        .unwrap();
    store
        .commit(put(Kind::Pool, "app", pool("hash"), Version(1)), any)
        .unwrap();
    let before = store.state().unwrap();
    let mut rx = store.subscribe();

    let e = store
        .commit(put(Kind::Pool, "app", pool("x"), Absent), any)
        .unwrap_err();
    assert!(matches!(e, CommitError::AlreadyExists { .. }), "{e:?}");
    let e = store
        .commit(put(Kind::Pool, "app", pool("x"), Version(1)), any)
        .unwrap_err();
    assert!(matches!(e, CommitError::Stale { current: 2, .. }), "{e:?}");
    let e = store
        .commit(put(Kind::Pool, "nope", pool("x"), Version(1)), any)
        .unwrap_err();
    assert!(matches!(e, CommitError::NotFound { .. }), "{e:?}");
    let e = store
        .commit(del(Kind::Pool, "app", Version(1)), any)
        .unwrap_err();
    assert!(matches!(e, CommitError::Stale { current: 2, .. }), "{e:?}");
    let e = store
        .commit(del(Kind::Pool, "nope", Version(1)), any)
        .unwrap_err();
    assert!(matches!(e, CommitError::NotFound { .. }), "{e:?}");
    // DELETE with If-None-Match: * — 412 if it exists, 404 if not, as HTTP evaluates it.
    let e = store
        .commit(del(Kind::Pool, "app", Absent), any)
        .unwrap_err();
    assert!(matches!(e, CommitError::AlreadyExists { .. }), "{e:?}");
    let e = store
        .commit(del(Kind::Pool, "nope", Absent), any)
        .unwrap_err();
    assert!(matches!(e, CommitError::NotFound { .. }), "{e:?}");
    let e = store
        .commit(put(Kind::Pool, "app", pool("x"), Version(2)), |_| Err("no"))
        .unwrap_err();
    assert!(matches!(e, CommitError::Invalid("no")), "{e:?}");
    assert_eq!(e.to_string(), "invalid configuration: no");

    assert_eq!(store.state().unwrap(), before);
    assert!(rx.try_recv().is_err(), "a refused change must not notify");
}

#[test]
fn validation_sees_whole_resulting_state_and_failure_changes_nothing() {
    let (_dir, store) = open_tmp();
    store
        .commit(put(Kind::Pool, "app", pool("round_robin"), Absent), refs)
        .unwrap();
    let route = json!({ "listener": "web", "pool": "app" });
    store
        .commit(put(Kind::Route, "shop", route, Absent), refs)
        .unwrap();
    let before = store.state().unwrap();

    // The validator gets the state *after* the change, at the new revision.
    let bad = json!({ "listener": "web", "pool": "missing" });
    let e = store
        .commit(
            put(Kind::Route, "shop", bad.clone(), Version(2)),
            |s: &State| {
                assert_eq!(s.revision, 3);
                assert_eq!(*s.get(Kind::Route, "shop").unwrap().body, bad);
                refs(s)
            },
        )
        .unwrap_err();
    match e {
        CommitError::Invalid(msg) => assert!(msg.starts_with("routes.shop.pool"), "{msg}"),
        e => panic!("{e:?}"),
    }
    // Deleting a pool still referenced is refused by the same whole-state check.
    let e = store
        .commit(del(Kind::Pool, "app", Version(1)), refs)
        .unwrap_err();
    assert!(matches!(e, CommitError::Invalid(_)), "{e:?}");

    assert_eq!(store.state().unwrap(), before);
    assert_eq!(store.revision().unwrap(), 2);
}

#[test]
fn commit_all_is_all_or_nothing() {
    let (_dir, store) = open_tmp();
    store
        .commit(put(Kind::Pool, "old", pool("random"), Absent), refs)
        .unwrap();
    let before = store.state().unwrap();

    // Last precondition fails: the earlier, valid changes are not kept either.
    let e = store
        .commit_all(
            vec![
                put(Kind::Pool, "app", pool("p2c"), Absent),
                put(
                    Kind::Listener,
                    "web",
                    json!({"bind": "0.0.0.0:8080"}),
                    Absent,
                ),
                put(Kind::Pool, "old", pool("hash"), Version(7)),
            ],
            refs,
        )
        .unwrap_err();
    // The error names the change that failed, so callers need not replay the batch.
    assert!(
        matches!(
            e,
            CommitError::Stale {
                index: 2,
                current: 1
            }
        ),
        "{e:?}"
    );
    assert_eq!(store.state().unwrap(), before);
    // An add of what an earlier change of the batch wrote: the version it has there.
    let e = store
        .commit_all(
            vec![
                put(Kind::Pool, "app", pool("p2c"), Absent),
                put(Kind::Pool, "app", pool("p2c"), Absent),
            ],
            refs,
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            CommitError::AlreadyExists {
                index: 1,
                current: 2
            }
        ),
        "{e:?}"
    );

    // Every precondition holds but the final state is invalid: nothing either.
    let e = store
        .commit_all(
            vec![
                put(Kind::Pool, "app", pool("p2c"), Absent),
                put(
                    Kind::Endpoint,
                    "ghost/10.0.0.1:80",
                    json!({"weight": 1}),
                    Absent,
                ),
            ],
            refs,
        )
        .unwrap_err();
    assert!(matches!(e, CommitError::Invalid(_)), "{e:?}");
    assert_eq!(store.state().unwrap(), before);

    // Valid only as a whole: the endpoint needs the pool added in the same batch, and the
    // old pool is removed. One revision for all; preconditions see earlier changes.
    let done = store
        .commit_all(
            vec![
                put(Kind::Pool, "app", pool("p2c"), Absent),
                put(
                    Kind::Endpoint,
                    &endpoint_name("app", "10.0.0.1:80"),
                    json!({"weight": 10}),
                    Absent,
                ),
                put(Kind::Pool, "app", pool("ewma"), Version(2)),
                del(Kind::Pool, "old", Version(1)),
            ],
            refs,
        )
        .unwrap();
    assert_eq!(done.len(), 4);
    assert!(done.iter().all(|c| c.revision == 2));
    assert_eq!(done[3].version, 0);
    let state = store.state().unwrap();
    assert_eq!(state.revision, 2);
    assert_eq!(*state.get(Kind::Pool, "app").unwrap().body, pool("ewma"));
    assert!(state.get(Kind::Pool, "old").is_none());
    let eps: Vec<_> = state
        .endpoints_of("app")
        .map(|(a, v)| (a, v.version))
        .collect();
    assert_eq!(eps, [("10.0.0.1:80", 2)]);

    // An empty batch is a no-op, not a new revision.
    assert_eq!(store.commit_all(Vec::new(), refs).unwrap(), []);
    assert_eq!(store.revision().unwrap(), 2);
}

#[test]
fn versions_are_never_reused() {
    let (_dir, store) = open_tmp();
    let v1 = store
        .commit(put(Kind::Listener, "web", json!({}), Absent), any)
        .unwrap();
    store
        .commit(del(Kind::Listener, "web", Version(v1.version)), any)
        .unwrap();
    let v3 = store
        .commit(put(Kind::Listener, "web", json!({}), Absent), any)
        .unwrap();
    assert_eq!((v1.version, v3.version), (1, 3));
    // A client still holding the first incarnation's version cannot touch the new one.
    let e = store
        .commit(del(Kind::Listener, "web", Version(1)), any)
        .unwrap_err();
    assert!(matches!(e, CommitError::Stale { current: 3, .. }), "{e:?}");
}

#[test]
fn subscribers_see_each_revision_in_order() {
    let (_dir, store) = open_tmp();
    let mut rx = store.subscribe();
    store
        .commit(put(Kind::Pool, "a", pool("random"), Absent), any)
        .unwrap();
    store
        .commit(put(Kind::Pool, "b", pool("random"), Absent), any)
        .unwrap();
    store.commit(del(Kind::Pool, "a", Version(1)), any).unwrap();
    assert_eq!(
        [
            rx.try_recv().unwrap(),
            rx.try_recv().unwrap(),
            rx.try_recv().unwrap()
        ],
        [1, 2, 3]
    );
    assert!(rx.try_recv().is_err());
}

#[test]
fn reopen_sees_the_same_state() {
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let store = Store::open(dir.path()).unwrap();
        store
            .commit(put(Kind::Pool, "app", pool("least_conn"), Absent), any)
            .unwrap();
        store
            .commit(put(Kind::Route, "r", json!({"pool": "app"}), Absent), any)
            .unwrap();
        store.state().unwrap()
    };
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.state().unwrap(), before);
    // And the revision keeps counting from where it was.
    let c = store
        .commit(put(Kind::Pool, "app", pool("p2c"), Version(1)), any)
        .unwrap();
    assert_eq!(
        c,
        Committed {
            version: 3,
            revision: 3
        }
    );
}
