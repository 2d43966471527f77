//! The config source seam is open: a source weir knows nothing of (common/mod.rs's
//! `Memory`, which lives in memory and reports changes made "elsewhere" through its watch,
//! as etcd's does) implements `Source`, and with ONE line, `RunningConfig::start(proxy,
//! source)`, gets what every source gets: changes validated on the typed model with the
//! failing field named, and applied to the data plane, which then serves traffic by them.
//! In the binary, that one line is an arm of `source` in crates/weir/src/run.rs.

use std::time::Duration;

use serde_json::json;
use weir_control::{Refused, RunningConfig};
use weir_proxy::Proxy;
use weir_store::{Change, Kind, Precondition};
use weir_testkit::HttpUpstream;

mod common;
use common::{listener_addr, one_route, state, Memory};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_source_commits_and_follows_changes_made_elsewhere() {
    let backend = HttpUpstream::spawn("a").await.unwrap();
    let source = Memory::new(one_route(1));
    let proxy = Proxy::new();
    let config = RunningConfig::start(proxy.clone(), source.clone()).unwrap();
    assert_eq!(config.source_info().mode, "memory");
    let web = listener_addr(&proxy);

    // A change through the API: validated on the typed model, field named.
    let put = |weight| Change::Put {
        kind: Kind::Endpoint,
        name: format!("app/{}", backend.addr()),
        body: json!({ "weight": weight }),
        pre: Precondition::Absent,
    };
    match config.commit(vec![put(0)]).await {
        Err(Refused::Invalid(i)) => assert_eq!(
            i.0[0].field.as_deref(),
            Some(format!("pools/app/endpoints/{}/weight", backend.addr()).as_str())
        ),
        other => panic!("{other:?}"),
    }
    config.commit(vec![put(2)]).await.unwrap();
    // Committed is running: the data plane serves by it as the commit returns.
    let resp = weir_testkit::client::get(web, "/").await.unwrap();
    assert_eq!((resp.status.as_u16(), resp.text()), (200, "a\n".into()));

    // A change made elsewhere, announced by the watch.
    *source.elsewhere.lock().unwrap() = Some(state(
        7,
        &[
            (Kind::Listener, "web", json!({ "bind": "127.0.0.1:0" })),
            (
                Kind::Route,
                "all",
                json!({ "listener": "web", "pool": "app" }),
            ),
            (Kind::Pool, "app", json!({})),
            (Kind::Pool, "other", json!({"balance": "p2c"})),
        ],
    ));
    source.tx.send(()).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while config.state().get(Kind::Pool, "other").is_none() {
        assert!(tokio::time::Instant::now() < deadline, "never applied");
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(config.state().revision, 7);
    assert!(config
        .state()
        .get(Kind::Endpoint, &format!("app/{}", backend.addr()))
        .is_none());
    // The pool lost its endpoint with the change: nothing to send to.
    let resp = weir_testkit::client::get(web, "/").await.unwrap();
    assert_eq!(resp.status.as_u16(), 503);
}
