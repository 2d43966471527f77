//! Optimistic concurrency: no lost updates between concurrent writers.

mod common;

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use common::*;
use serde_json::json;
use weir_store::{CommitError, Kind, Precondition::*, State};

#[test]
fn two_writers_from_the_same_version_exactly_one_wins() {
    let (_dir, store) = open_tmp();
    store
        .commit(put(Kind::Pool, "app", pool("random"), Absent), any)
        .unwrap();
    let store = Arc::new(store);
    for round in 0..10 {
        let base = store.get(Kind::Pool, "app").unwrap().unwrap().version;
        let barrier = Arc::new(Barrier::new(2));
        let handles: Vec<_> = (0..2)
            .map(|who| {
                let (store, barrier) = (store.clone(), barrier.clone());
                thread::spawn(move || {
                    barrier.wait();
                    let body = json!({ "balance": "p2c", "round": round, "who": who });
                    // A slow validator widens the window a check-then-write race would need.
                    store.commit(put(Kind::Pool, "app", body, Version(base)), |_: &State| {
                        thread::sleep(Duration::from_millis(5));
                        Ok::<_, String>(())
                    })
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let won: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(won.len(), 1, "round {round}: {results:?}");
        let winner = won[0].version;
        let lost = results.iter().find_map(|r| r.as_ref().err()).unwrap();
        assert!(
            matches!(lost, CommitError::Stale { current, .. } if *current == winner),
            "round {round}: {lost:?}"
        );
    }
}

#[test]
fn read_modify_write_with_retry_loses_no_update() {
    let (_dir, store) = open_tmp();
    store
        .commit(put(Kind::Pool, "n", json!({ "count": 0 }), Absent), any)
        .unwrap();
    let store = Arc::new(store);
    const THREADS: u64 = 6;
    const EACH: u64 = 5;
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let store = store.clone();
            thread::spawn(move || {
                for _ in 0..EACH {
                    loop {
                        let cur = store.get(Kind::Pool, "n").unwrap().unwrap();
                        let next = json!({ "count": cur.body["count"].as_u64().unwrap() + 1 });
                        match store.commit(put(Kind::Pool, "n", next, Version(cur.version)), any) {
                            Ok(_) => break,
                            Err(CommitError::Stale { .. }) => continue,
                            Err(e) => panic!("{e:?}"),
                        }
                    }
                }
            })
        })
        .collect();
    handles.into_iter().for_each(|h| h.join().unwrap());
    let n = store.get(Kind::Pool, "n").unwrap().unwrap();
    assert_eq!(n.body["count"], THREADS * EACH);
    assert_eq!(store.revision().unwrap(), 1 + THREADS * EACH);
}
