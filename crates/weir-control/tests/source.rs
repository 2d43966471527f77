//! A config source that lives in memory and reports changes made "elsewhere" through its
//! watch, as an etcd source will: what a new source has to implement, and that the commit
//! path takes it without knowing what it is.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;
use weir_control::source::{Check, Commit, Initial, Outside};
use weir_control::{Checked, Refused, RunningConfig, Source, StartError};
use weir_proxy::Proxy;
use weir_store::{Change, Kind, Precondition, State, Versioned};

struct Memory {
    /// What a watch event will find.
    elsewhere: Mutex<Option<State>>,
    tx: mpsc::Sender<()>,
    rx: Mutex<Option<mpsc::Receiver<()>>>,
}

fn state(revision: u64, items: &[(Kind, &str, serde_json::Value)]) -> State {
    let mut s = State {
        revision,
        ..State::default()
    };
    for (kind, name, body) in items {
        s.resources.insert(
            (*kind, name.to_string()),
            Versioned {
                version: revision,
                body: body.clone().into(),
            },
        );
    }
    s
}

impl Source for Memory {
    fn describe(&self) -> (&'static str, String) {
        ("memory", "test".into())
    }

    fn initial(&self) -> Result<Initial, StartError> {
        Ok(Initial {
            state: state(1, &[(Kind::Pool, "app", json!({}))]),
            preamble: "[admin]\nlisten = \"127.0.0.1:0\"\n".into(),
        })
    }

    fn commit(
        &self,
        current: &Arc<State>,
        changes: Vec<Change>,
        check: Check<'_, Checked>,
    ) -> Result<Commit<Checked>, Refused> {
        let keys = weir_control::source::keys(&changes);
        let applied =
            weir_store::apply::<()>((**current).clone(), changes).map_err(|e| match e {
                weir_store::CommitError::NotFound { index } => Refused::NotFound { index },
                e => panic!("{e:?}"),
            })?;
        let checked = check(&applied.state, &keys)?;
        Ok(Commit {
            committed: applied.committed,
            state: Arc::new(applied.state),
            checked,
        })
    }

    fn watch(&self) -> Option<mpsc::Receiver<()>> {
        self.rx.lock().unwrap().take()
    }

    fn reread(&self, _current: &State) -> Result<Option<Outside>, String> {
        Ok(self.elsewhere.lock().unwrap().take().map(|state| Outside {
            state,
            preamble: "[admin]\nlisten = \"127.0.0.1:0\"\n".into(),
            admin_changed: false,
        }))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_source_commits_and_follows_changes_made_elsewhere() {
    let (tx, rx) = mpsc::channel(4);
    let source = Arc::new(Memory {
        elsewhere: Mutex::new(None),
        tx,
        rx: Mutex::new(Some(rx)),
    });
    let config = RunningConfig::start(Proxy::new(), source.clone()).unwrap();
    assert_eq!(config.source_info().mode, "memory");

    // A change through the API: validated on the typed model, field named.
    let put = |weight| Change::Put {
        kind: Kind::Endpoint,
        name: "app/127.0.0.1:9001".into(),
        body: json!({ "weight": weight }),
        pre: Precondition::Absent,
    };
    match config.commit(vec![put(0)]).await {
        Err(Refused::Invalid(i)) => assert_eq!(
            i.0[0].field.as_deref(),
            Some("pools/app/endpoints/127.0.0.1:9001/weight")
        ),
        other => panic!("{other:?}"),
    }
    config.commit(vec![put(2)]).await.unwrap();
    assert!(config
        .state()
        .get(Kind::Endpoint, "app/127.0.0.1:9001")
        .is_some());

    // A change made elsewhere, announced by the watch.
    *source.elsewhere.lock().unwrap() = Some(state(
        7,
        &[
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
        .get(Kind::Endpoint, "app/127.0.0.1:9001")
        .is_none());
}
