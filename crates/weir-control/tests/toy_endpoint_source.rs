//! The discovery seam is open: an endpoint source weir knows nothing of ("toy": the test says
//! which addresses a pool has, as a DNS answer or an EndpointSlice would) implements
//! `EndpointSource`, and with ONE line, `config.discover(vec![toy])`, a pool's endpoints come
//! from it while listeners, routes and pool settings come from the config source. What it
//! then gets is what an endpoint change through the API gets: traffic moves to the new set at
//! once, an endpoint it drops drains (the request in flight finishes), and a change to the
//! rest of the config keeps what it sent. In the binary, the one line is an entry of
//! `endpoint_sources` in crates/weir/src/boot.rs.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use weir_config::{Config, Endpoint};
use weir_control::{EndpointSet, EndpointSource, RunningConfig, Sets};
use weir_proxy::Proxy;
use weir_store::{Change, Kind, Precondition};
use weir_testkit::{client, HttpUpstream};

mod common;
use common::{listener_addr, one_route, Memory};

#[derive(Default)]
struct Toy {
    sets: Mutex<Option<Sets>>,
    /// The pools of each config it was told, in order.
    told: Mutex<Vec<BTreeSet<String>>>,
}

impl EndpointSource for Toy {
    fn name(&self) -> &'static str {
        "toy"
    }

    fn start(&self, sets: Sets) {
        *self.sets.lock().unwrap() = Some(sets);
    }

    fn configured(&self, config: &Arc<Config>) {
        let pools = config.pools.keys().cloned().collect();
        self.told.lock().unwrap().push(pools);
    }
}

impl Toy {
    /// What the toy's world says `pool` has now.
    async fn send(&self, pool: &str, addrs: &[SocketAddr]) {
        let sets = self.sets.lock().unwrap().clone().expect("started");
        let endpoints = addrs.iter().map(|&addr| Endpoint { addr, weight: 1 });
        sets.send(EndpointSet {
            pool: pool.into(),
            endpoints: endpoints.collect(),
        })
        .await
        .unwrap();
    }
}

/// Waits until a request through weir is answered by backend `name` (the fake backends
/// answer their name), or, for `None`, refused for want of an endpoint.
async fn until_answered(web: SocketAddr, name: Option<&str>) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let resp = client::get(web, "/").await.unwrap();
        let answered = match name {
            Some(name) => resp.status == 200 && resp.text().trim_end() == name,
            None => resp.status == 503,
        };
        if answered {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still answered {} {:?}",
            resp.status,
            resp.text()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pools_endpoints_come_from_an_endpoint_source_and_the_rest_from_the_config() {
    let (a, b) = (
        HttpUpstream::spawn("a").await.unwrap(),
        HttpUpstream::spawn("b").await.unwrap(),
    );
    let source = Memory::new(one_route(1));
    let proxy = Proxy::new();
    let config = RunningConfig::start(proxy.clone(), source).unwrap();
    let web = listener_addr(&proxy);
    let toy = Arc::new(Toy::default());
    config.discover(vec![toy.clone()]);
    assert_eq!(toy.told.lock().unwrap().len(), 1, "told the running config");

    // The config lists no endpoint for the pool: the source's serve.
    until_answered(web, None).await;
    toy.send("app", &[a.addr()]).await;
    until_answered(web, Some("a")).await;

    // A request in flight on `a` when the source drops it finishes there.
    let slow = tokio::spawn(client::get(web, "/?latency_ms=1500"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while a.in_flight() == 0 {
        assert!(tokio::time::Instant::now() < deadline, "never reached a");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    toy.send("app", &[b.addr()]).await;
    until_answered(web, Some("b")).await;
    let resp = slow.await.unwrap().unwrap();
    assert_eq!((resp.status.as_u16(), resp.text()), (200, "a\n".into()));

    // A change to the rest of the config (a pool setting, a pool added) keeps what the
    // source sent, and the source is told the new config.
    let app = config.state().get(Kind::Pool, "app").unwrap().version;
    let put = |name: &str, body, pre| Change::Put {
        kind: Kind::Pool,
        name: name.into(),
        body,
        pre,
    };
    config
        .commit(vec![
            put(
                "app",
                json!({ "balance": "p2c" }),
                Precondition::Version(app),
            ),
            put("other", json!({}), Precondition::Absent),
        ])
        .await
        .unwrap();
    let resp = client::get(web, "/").await.unwrap();
    assert_eq!((resp.status.as_u16(), resp.text()), (200, "b\n".into()));
    let told = toy.told.lock().unwrap().last().cloned().unwrap();
    assert_eq!(told, BTreeSet::from(["app".into(), "other".into()]));

    // An endpoint the config lists itself serves beside the source's.
    config
        .commit(vec![Change::Put {
            kind: Kind::Endpoint,
            name: format!("app/{}", a.addr()),
            body: json!({}),
            pre: Precondition::Absent,
        }])
        .await
        .unwrap();
    let mut seen = BTreeSet::new();
    for _ in 0..50 {
        seen.insert(client::get(web, "/").await.unwrap().text());
        if seen.len() == 2 {
            break;
        }
    }
    assert_eq!(seen, BTreeSet::from(["a\n".into(), "b\n".into()]));

    // An empty set takes the source's endpoints away; the config's own stay.
    // (Balanced over both, 20 answers in a row from `a` alone come once in a million.)
    toy.send("app", &[]).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut in_a_row = 0;
    while in_a_row < 20 {
        assert!(tokio::time::Instant::now() < deadline, "b still served");
        match client::get(web, "/").await.unwrap().text().as_str() {
            "a\n" => in_a_row += 1,
            _ => in_a_row = 0,
        }
    }
}
