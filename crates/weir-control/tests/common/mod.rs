//! A config source that lives in memory and reports changes made "elsewhere" through its
//! watch, as an etcd source does: what a new config source has to implement (the `Source`
//! trait), shared by the tests that need a source the commit path knows nothing of.

use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use weir_control::source::{Check, Commit, Initial, Outside};
use weir_control::{Checked, Refused, Source, StartError};
use weir_store::{Change, Kind, State, Versioned};

const PREAMBLE: &str = "[admin]\nlisten = \"127.0.0.1:0\"\n";

pub struct Memory {
    /// What it starts with.
    first: State,
    /// What a watch event will find.
    pub elsewhere: Mutex<Option<State>>,
    /// Announces a change made elsewhere (not every test makes one).
    #[allow(dead_code)]
    pub tx: mpsc::Sender<()>,
    rx: Mutex<Option<mpsc::Receiver<()>>>,
}

impl Memory {
    pub fn new(first: State) -> Arc<Memory> {
        let (tx, rx) = mpsc::channel(4);
        Arc::new(Memory {
            first,
            elsewhere: Mutex::new(None),
            tx,
            rx: Mutex::new(Some(rx)),
        })
    }
}

pub fn state(revision: u64, items: &[(Kind, &str, serde_json::Value)]) -> State {
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

/// A listener on any free port whose one route sends everything to pool `app`, which lists
/// no endpoint of its own.
pub fn one_route(revision: u64) -> State {
    state(
        revision,
        &[
            (
                Kind::Listener,
                "web",
                serde_json::json!({ "bind": "127.0.0.1:0" }),
            ),
            (
                Kind::Route,
                "all",
                serde_json::json!({ "listener": "web", "pool": "app" }),
            ),
            (Kind::Pool, "app", serde_json::json!({})),
        ],
    )
}

impl Source for Memory {
    fn describe(&self) -> (&'static str, String) {
        ("memory", "test".into())
    }

    fn initial(&self) -> Result<Initial, StartError> {
        Ok(Initial {
            state: self.first.clone(),
            preamble: PREAMBLE.into(),
        })
    }

    fn commit(
        &self,
        current: &Arc<State>,
        changes: Vec<Change>,
        check: Check<'_, Checked>,
    ) -> Result<Commit<Checked>, Refused> {
        weir_control::source::commit_in_memory(current, changes, check)
    }

    fn watch(&self) -> Option<mpsc::Receiver<()>> {
        self.rx.lock().unwrap().take()
    }

    fn reread(&self, _current: &State) -> Result<Option<Outside>, String> {
        Ok(self.elsewhere.lock().unwrap().take().map(|state| Outside {
            state,
            preamble: PREAMBLE.into(),
            admin_changed: false,
        }))
    }
}

/// Where the one listener of `proxy` (bound to port 0) accepts.
pub fn listener_addr(proxy: &weir_proxy::Proxy) -> std::net::SocketAddr {
    match proxy.local_addrs()[..] {
        [(_, local)] => local,
        ref all => panic!("one listener expected: {all:?}"),
    }
}
