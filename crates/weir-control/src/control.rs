//! The running config's owner: every change, from the API, a file reload or an expired lease,
//! goes through [`Control`], one at a time, and reaches the data plane before it is answered.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

use tracing::{error, info, warn};
use weir_config::Config;
use weir_proxy::{ApplyError, Prepared, Proxy};
use weir_store::{Change, CommitError, Committed, Kind, State, Store, StoreError};

use crate::compile::{compile, FieldError, Invalid};
use crate::file::FileSource;
use crate::leases::Leases;

/// Where the config comes from.
pub enum Source {
    /// A config file (`weir run -c`), or the embedded demo config (`path` None).
    File(FileSource),
    /// The durable store (`weir run --data DIR`).
    Store(Arc<Store>),
}

/// Why a change was not made. In every case the running config is untouched.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("change {index}: not found")]
    NotFound { index: usize },
    #[error("change {index}: already exists at version {current}")]
    AlreadyExists { index: usize, current: u64 },
    #[error("change {index}: stale version; the current version is {current}")]
    Stale { index: usize, current: u64 },
    #[error("{0}")]
    Invalid(#[from] Invalid),
    #[error("weir runs from the config file {0}; change the file (it is reloaded on change) or run weir without -c to manage listeners, routes and pools through the API")]
    FileMode(String),
    #[error("endpoint {name} is defined in the config file {file}; change it there")]
    FileDefined { name: String, file: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What the API shows about the source.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SourceInfo {
    pub mode: &'static str,
    pub source: String,
    pub revision: u64,
}

pub struct Control {
    proxy: Arc<Proxy>,
    source: Mutex<Source>,
    /// `[admin]` and `[global]` as TOML, written before the resources when validating.
    preamble: RwLock<String>,
    view: RwLock<Arc<State>>,
    /// Changes are made one at a time, so they reach the data plane in commit order.
    writes: tokio::sync::Mutex<()>,
    pub(crate) leases: Leases,
}

impl Control {
    /// Builds the first config from `source` and applies it. `preamble` is `[admin]` (and
    /// `[global]`) for the store; a file brings its own.
    pub fn start(
        proxy: Arc<Proxy>,
        source: Source,
        preamble: String,
    ) -> Result<Arc<Control>, StartError> {
        let (state, preamble) = match &source {
            Source::Store(store) => (store.state()?, preamble),
            Source::File(f) => (f.merged(), f.preamble().to_owned()),
        };
        let config = compile(&state, &preamble).map_err(StartError::Invalid)?;
        proxy.apply(&config)?;
        let control = Arc::new(Control {
            proxy,
            source: Mutex::new(source),
            preamble: RwLock::new(preamble),
            view: RwLock::new(Arc::new(state.clone())),
            writes: tokio::sync::Mutex::new(()),
            leases: Leases::default(),
        });
        // Leases live in memory: after a restart each gets a fresh ttl to be renewed in.
        control.leases.sync(&state, &state_keys(&state));
        info!("weir running: {}", weir_config::summary(&config));
        Ok(control)
    }

    /// The current resources (what the API reads).
    pub fn state(&self) -> Arc<State> {
        self.view.read().unwrap().clone()
    }

    pub fn source_info(&self) -> SourceInfo {
        let revision = self.state().revision;
        match &*self.source.lock().unwrap() {
            Source::Store(s) => SourceInfo {
                mode: "store",
                source: s.path().display().to_string(),
                revision,
            },
            Source::File(f) => SourceInfo {
                mode: "file",
                source: f.name().to_owned(),
                revision,
            },
        }
    }

    /// The refusal for writing a resource the config file defines, if it does.
    pub fn file_defined(&self, kind: Kind, name: &str) -> Option<Refused> {
        match &*self.source.lock().unwrap() {
            Source::File(f) => f
                .check_writable(&[Change::Delete {
                    kind,
                    name: name.to_owned(),
                    pre: weir_store::Precondition::Absent,
                }])
                .err(),
            Source::Store(_) => None,
        }
    }

    pub fn is_file_mode(&self) -> bool {
        matches!(&*self.source.lock().unwrap(), Source::File(_))
    }

    /// The config as a file `weir check` accepts. Leased endpoints belong to the services
    /// that registered them, so they are left out (importing them would make them permanent).
    pub fn export(&self) -> String {
        let mut state = (*self.state()).clone();
        let before = state.resources.len();
        state
            .resources
            .retain(|(k, _), v| *k != Kind::Endpoint || v.body.get("ttl").is_none());
        let leased = before - state.resources.len();
        let mut text = crate::render::render(&state, &self.preamble.read().unwrap()).text;
        if leased > 0 {
            text.push_str(&format!(
                "\n# {leased} endpoint(s) registered with a lease are not exported.\n"
            ));
        }
        text
    }

    /// Validates and commits `changes` all-or-nothing, then applies the result. Returns once
    /// the data plane runs it.
    pub async fn commit(&self, changes: Vec<Change>) -> Result<Vec<Committed>, Refused> {
        if changes.is_empty() {
            return Ok(Vec::new());
        }
        let _one = self.writes.lock().await;
        let touched: Vec<(Kind, String)> = changes.iter().map(change_key).collect();
        let preamble = self.preamble.read().unwrap().clone();
        let store = match &*self.source.lock().unwrap() {
            Source::Store(s) => Some(s.clone()),
            Source::File(f) => {
                f.check_writable(&changes)?;
                None
            }
        };
        let (committed, state, config, prepared) = match store {
            Some(store) => self.commit_store(store, changes, preamble).await?,
            None => self.commit_file(changes, &preamble)?,
        };
        if let Err(e) = self.proxy.install(prepared, &config) {
            // Only starting an already bound listener can fail here; the change stands.
            error!("committed change not fully applied: {e}");
        }
        self.leases.sync(&state, &touched);
        // An audit trail of runtime changes, one line per commit.
        let what: Vec<String> = touched
            .iter()
            .map(|(k, n)| {
                let verb = if state.get(*k, n).is_some() {
                    "put"
                } else {
                    "delete"
                };
                format!("{verb} {}", weir_store::resource_path(*k, n))
            })
            .collect();
        info!(
            revision = state.revision,
            "config change applied: {}",
            what.join(", ")
        );
        *self.view.write().unwrap() = Arc::new(state);
        Ok(committed)
    }

    async fn commit_store(
        &self,
        store: Arc<Store>,
        changes: Vec<Change>,
        preamble: String,
    ) -> Result<(Vec<Committed>, State, Config, Prepared), Refused> {
        let proxy = self.proxy.clone();
        let before = self.state();
        let (result, stash) = tokio::task::spawn_blocking(move || {
            let mut stash = None;
            let result = store.commit_all(changes.clone(), |state: &State| {
                let (config, prepared) = check(&proxy, state, &preamble)?;
                stash = Some((state.clone(), config, prepared));
                Ok::<_, Invalid>(())
            });
            (result.map_err(|e| refused(e, &before, &changes)), stash)
        })
        .await
        .expect("commit task panicked");
        let committed = result?;
        let (state, config, prepared) = stash.expect("a commit is validated first");
        Ok((committed, state, config, prepared))
    }

    fn commit_file(
        &self,
        changes: Vec<Change>,
        preamble: &str,
    ) -> Result<(Vec<Committed>, State, Config, Prepared), Refused> {
        let before = self.state();
        let applied = weir_store::apply::<Invalid>((*before).clone(), changes.clone())
            .map_err(|e| refused(e, &before, &changes))?;
        let (config, prepared) = check(&self.proxy, &applied.state, preamble)?;
        if let Source::File(f) = &mut *self.source.lock().unwrap() {
            f.set_overlay(&applied.state);
        }
        Ok((applied.committed, applied.state, config, prepared))
    }

    /// File mode: re-reads the file; on any error the running config stays.
    pub async fn reload_file(&self) {
        let _one = self.writes.lock().await;
        let current = self.state();
        let next = {
            let mut source = self.source.lock().unwrap();
            let Source::File(f) = &mut *source else {
                return;
            };
            match f.reread(&current) {
                Ok(Some(next)) => next,
                Ok(None) => {
                    info!("config unchanged");
                    return;
                }
                Err(e) => {
                    self.proxy.note_reload(false);
                    error!("reload rejected, running config unchanged:\n{e}");
                    return;
                }
            }
        };
        let crate::file::Next {
            merged: state,
            file,
            preamble,
            admin_changed,
        } = next;
        if admin_changed {
            warn!("[admin] changes take effect at the next start");
        }
        match check(&self.proxy, &state, &preamble) {
            Ok((config, prepared)) => match self.proxy.install(prepared, &config) {
                Ok(()) => {
                    self.proxy.note_reload(true);
                    info!("config reloaded: {}", weir_config::summary(&config));
                    if let Source::File(f) = &mut *self.source.lock().unwrap() {
                        f.accept(file, &state, preamble.clone());
                    }
                    // Not a renewal: only leases whose endpoint is gone are dropped.
                    self.leases.sync(&state, &[]);
                    *self.preamble.write().unwrap() = preamble;
                    *self.view.write().unwrap() = Arc::new(state);
                }
                Err(e) => {
                    self.proxy.note_reload(false);
                    error!("reload failed, running config unchanged: {e}");
                }
            },
            Err(e) => {
                self.proxy.note_reload(false);
                error!("reload failed, running config unchanged: {e}");
            }
        }
    }
}

/// Validates `state` and prepares the data plane for it (binds new listeners), so that a
/// change that is committed is known to apply.
fn check(proxy: &Proxy, state: &State, preamble: &str) -> Result<(Config, Prepared), Invalid> {
    let config = compile(state, preamble)?;
    match proxy.prepare(&config) {
        Ok(p) => Ok((config, p)),
        Err(e) => Err(Invalid(vec![apply_error_field(&config, e)])),
    }
}

/// Names the listener whose bind failed, so the API can point at `listeners/NAME/bind`.
fn apply_error_field(config: &Config, e: ApplyError) -> FieldError {
    let field = match &e {
        ApplyError::Bind(b) => config
            .listeners
            .iter()
            .find(|(_, l)| l.bind == b.addr)
            .map(|(n, _)| format!("listeners/{n}/bind")),
        ApplyError::AccessLog { .. } => config
            .listeners
            .iter()
            .find(|(_, l)| l.access_log.is_some())
            .map(|(n, _)| format!("listeners/{n}/access_log")),
        ApplyError::Start(_) => None,
    };
    FieldError {
        field,
        message: e.to_string(),
    }
}

/// Turns the store's answer into one that names the failing change: preconditions are
/// re-checked one prefix at a time against the state the change was tried on.
fn refused(e: CommitError<Invalid>, before: &State, changes: &[Change]) -> Refused {
    let index = || {
        (0..changes.len())
            .find(|&i| weir_store::apply::<()>(before.clone(), changes[..=i].to_vec()).is_err())
            .unwrap_or(0)
    };
    match e {
        CommitError::NotFound => Refused::NotFound { index: index() },
        CommitError::AlreadyExists => {
            let i = index();
            // The version it exists at, in the state the failing change was checked against.
            let current = weir_store::apply::<()>(before.clone(), changes[..i].to_vec())
                .ok()
                .and_then(|a| {
                    let (kind, name) = change_key(&changes[i]);
                    a.state.get(kind, &name).map(|v| v.version)
                })
                .unwrap_or(0);
            Refused::AlreadyExists { index: i, current }
        }
        CommitError::Stale { current } => Refused::Stale {
            index: index(),
            current,
        },
        CommitError::Invalid(i) => Refused::Invalid(i),
        CommitError::Store(s) => Refused::Store(s),
    }
}

fn change_key(c: &Change) -> (Kind, String) {
    match c {
        Change::Put { kind, name, .. } | Change::Delete { kind, name, .. } => (*kind, name.clone()),
    }
}

fn state_keys(state: &State) -> Vec<(Kind, String)> {
    state.resources.keys().cloned().collect()
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("the stored configuration is invalid: {0}")]
    Invalid(Invalid),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Apply(#[from] ApplyError),
}

/// The path of a file source, for messages.
pub fn file_name(path: &Option<PathBuf>) -> String {
    path.as_ref()
        .map_or("<demo>".into(), |p| p.display().to_string())
}
