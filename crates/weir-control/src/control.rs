//! The running config's owner: every change, from the API, a file reload or an expired lease,
//! goes through [`RunningConfig`], one at a time, and reaches the data plane before it is answered.
//! Which source the config comes from is the [`Source`]'s business; the commit path is the
//! same for all of them.

use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use tracing::{error, info, warn};
use weir_config::{Config, Resources};
use weir_proxy::{ApplyError, Proxy};
use weir_store::{Change, Committed, Kind, State};

use crate::checked::{Checked, Plan};
use crate::compile::{self, FieldError, Invalid};
use crate::discovery::discovered::Discovered;
use crate::discovery::source::EndpointSource;
use crate::held::{self, Held};
use crate::leases::Leases;
use crate::refused::Refused;
use crate::source::Source;
use crate::start_error::StartError;

/// What the API shows about the source.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SourceInfo {
    pub mode: &'static str,
    pub source: String,
    pub revision: u64,
    /// Stored resources that do not validate, held back (`held.rs`).
    pub invalid: Vec<InvalidResource>,
}

/// A stored resource held back because it does not validate, as the API shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct InvalidResource {
    /// `routes/NAME`, `pools/POOL/endpoints/ADDR`...
    pub path: String,
    /// Its stored version.
    pub version: u64,
    pub errors: Vec<FieldError>,
    /// Whether a last valid version of it runs meanwhile (else it does not run at all).
    pub running: bool,
}

pub struct RunningConfig {
    pub(crate) proxy: Arc<Proxy>,
    pub(crate) source: Arc<dyn Source>,
    /// The typed config, kept in step with `view`.
    pub(crate) model: Arc<Mutex<Resources>>,
    /// `[admin]` and `[global]` as TOML, for `export`.
    preamble: RwLock<String>,
    view: RwLock<Arc<State>>,
    /// Resources of `view` that do not validate: with a source that holds them back
    /// (`held.rs`), the data plane runs `view` with their running versions instead.
    held: RwLock<Arc<Held>>,
    /// Changes are made one at a time, so they reach the data plane in commit order.
    pub(crate) writes: tokio::sync::Mutex<()>,
    pub(crate) leases: Leases,
    /// What endpoint sources sent (`discover.rs`), merged into every config the data plane
    /// takes.
    pub(crate) discovered: Mutex<Discovered>,
    pub(crate) endpoint_sources: RwLock<Vec<Arc<dyn EndpointSource>>>,
}

impl RunningConfig {
    /// Leases in memory follow the committed state, unless the source keeps them.
    pub(crate) fn sync_leases(&self, state: &State, touched: &[(Kind, String)]) {
        if !self.source.keeps_leases() {
            self.leases.sync(state, touched);
        }
    }

    /// Builds the first config from `source` and applies it. When it does not validate and
    /// the source kept the config this replica last applied (etcd's cache), it starts from
    /// that, and takes the source's own at once, holding back what does not validate.
    pub fn start(
        proxy: Arc<Proxy>,
        source: Arc<dyn Source>,
    ) -> Result<Arc<RunningConfig>, StartError> {
        let initial = source.initial()?;
        let (state, model, fallen_back) = match compile::model(&initial.state, &initial.preamble) {
            Ok(model) => (initial.state, model, false),
            Err(e) => match source.fallback() {
                Some((state, from)) => {
                    let model =
                        compile::model(&state, &initial.preamble).map_err(StartError::Invalid)?;
                    warn!(
                        "the stored configuration does not validate ({e}): starting from the config this replica last applied ({from}); what does not validate is held back and shown by the API"
                    );
                    (state, model, true)
                }
                None => return Err(StartError::Invalid(e)),
            },
        };
        proxy.apply(model.config())?;
        info!("weir running: {}", weir_config::summary(model.config()));
        let control = Arc::new(RunningConfig {
            proxy,
            source,
            model: Arc::new(Mutex::new(model)),
            preamble: RwLock::new(initial.preamble),
            view: RwLock::new(Arc::new(state.clone())),
            held: RwLock::default(),
            writes: tokio::sync::Mutex::new(()),
            leases: Leases::default(),
            discovered: Mutex::default(),
            endpoint_sources: RwLock::default(),
        });
        // Leases live in memory: after a restart each gets a fresh ttl to be renewed in.
        control.sync_leases(&state, &state_keys(&state));
        control.source.applied(&control.state());
        if let Some(changes) = control.source.watch() {
            tokio::spawn(follow(Arc::downgrade(&control), changes, fallen_back));
        }
        Ok(control)
    }

    /// The current resources (what the API reads).
    pub fn state(&self) -> Arc<State> {
        self.view.read().unwrap().clone()
    }

    pub fn source_info(&self) -> SourceInfo {
        let (mode, source) = self.source.describe();
        SourceInfo {
            mode,
            source,
            revision: self.state().revision,
            invalid: self.invalid(),
        }
    }

    /// The stored resources held back because they do not validate.
    pub fn held(&self) -> Arc<Held> {
        self.held.read().unwrap().clone()
    }

    /// [`RunningConfig::held`] as the API shows it, by path.
    pub fn invalid(&self) -> Vec<InvalidResource> {
        let (state, held) = (self.state(), self.held());
        let mut list: Vec<InvalidResource> = held
            .iter()
            .map(|((kind, name), h)| InvalidResource {
                path: weir_store::resource_path(*kind, name),
                version: state.get(*kind, name).map_or(0, |v| v.version),
                errors: h.why.0.clone(),
                running: h.running.is_some(),
            })
            .collect();
        list.sort_by(|a, b| a.path.cmp(&b.path));
        list
    }

    /// The config the data plane runs: the current resources, with the running version of
    /// each held one.
    fn running(&self) -> Arc<State> {
        running_of(&self.state(), &self.held())
    }

    /// Takes the new view and what of it is held back, saying what changed in that.
    fn show(&self, state: Arc<State>, held: Held) {
        let (before, shown) = (self.held(), self.state());
        for ((kind, name), h) in &held {
            // Newly held, or written again and still held.
            let key = (*kind, name.clone());
            let version = |s: &State| s.get(*kind, name).map(|v| v.version);
            if !before.contains_key(&key) || version(&shown) != version(&state) {
                let runs = match h.running {
                    Some(_) => "its last valid version runs",
                    None => "it does not run",
                };
                warn!(
                    "config store: {} does not validate ({}); held back: {runs}, the rest of the config runs",
                    weir_store::resource_path(*kind, name),
                    h.why
                );
            }
        }
        for (kind, name) in before.keys() {
            if !held.contains_key(&(*kind, name.clone())) {
                info!(
                    "config store: {} is held back no longer",
                    weir_store::resource_path(*kind, name)
                );
            }
        }
        weir_metrics::config_store::set_invalid(held.len());
        *self.view.write().unwrap() = state;
        *self.held.write().unwrap() = Arc::new(held);
    }

    /// Why the config source cannot be reached now (a shared store away), if it cannot.
    pub fn store_problem(&self) -> Option<String> {
        self.source.problem()
    }

    /// The refusal for writing a resource the source does not take, if it does not.
    pub fn file_defined(&self, kind: Kind, name: &str) -> Option<Refused> {
        self.source
            .accepts(&[Change::Delete {
                kind,
                name: name.to_owned(),
                pre: weir_store::Precondition::Absent,
            }])
            .err()
    }

    /// Whether the source can be re-read (a file): what SIGHUP does.
    pub fn is_file_mode(&self) -> bool {
        self.source.rereads()
    }

    /// The config as a file `weir check` accepts. Leased endpoints belong to the services
    /// that registered them, so they are left out (importing them would make them permanent).
    /// Certificates are shown without their private key (`key_pem`), which is never read
    /// back: such a file needs the keys put back before `weir check` accepts it.
    pub fn export(&self) -> String {
        let mut state = (*self.running()).clone();
        let before = state.resources.len();
        state
            .resources
            .retain(|(k, _), v| *k != Kind::Endpoint || v.body.get("ttl").is_none());
        let leased = before - state.resources.len();
        let mut keyless = Vec::new();
        for ((kind, name), v) in state.resources.iter_mut() {
            if let std::borrow::Cow::Owned(spec) = crate::secret::shown(*kind, &v.body) {
                v.body = spec.into();
                keyless.push(name.clone());
            }
        }
        let mut text = crate::render::render(&state, &self.preamble.read().unwrap()).text;
        if leased > 0 {
            text.push_str(&format!(
                "\n# {leased} endpoint(s) registered with a lease are not exported.\n"
            ));
        }
        if !keyless.is_empty() {
            text.push_str(&format!(
                "\n# Private keys are never exported: add key_pem to [certificates.{}] before using this file.\n",
                keyless.join("], [certificates.")
            ));
        }
        let held = self.invalid();
        if !held.is_empty() {
            let paths: Vec<String> = held.into_iter().map(|h| h.path).collect();
            text.push_str(&format!(
                "\n# Stored but held back, as they do not validate (what runs is exported): {}.\n",
                paths.join(", ")
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
        self.source.accepts(&changes)?;
        let touched = crate::source::keys(&changes);
        let current = self.state();
        let running = self.running();
        // With a source others write too, what they wrote is taken as far as it validates;
        // this change's own resources must validate.
        let holds = self.source.holds_back();
        let (source, model, proxy) = (self.source.clone(), self.model.clone(), self.proxy.clone());
        let must = touched.clone();
        // The store's commit waits for an fsync.
        let result = tokio::task::spawn_blocking(move || {
            let mut model = model.lock().unwrap();
            let mut taken = false;
            let mut check = |state: &State, keys: &[(Kind, String)]| {
                if taken {
                    // Asked again (another replica committed first): from what runs.
                    rebuild(&mut model, &running);
                    taken = false;
                }
                match holds {
                    true => check(
                        &proxy,
                        &mut model,
                        Some(&running),
                        state,
                        &must,
                        false,
                        &mut taken,
                    ),
                    false => check(&proxy, &mut model, None, state, keys, false, &mut taken),
                }
            };
            let result = source.commit(&current, changes, &mut check);
            if result.is_err() && taken {
                // The model took the change, but it was refused after all (a bind failed, the
                // store could not write): read the model again from the config that runs.
                rebuild(&mut model, &running);
            }
            result
        })
        .await
        .expect("commit task panicked")?;
        let state = result.state;
        let Checked {
            config,
            plan,
            took,
            held,
        } = result.checked;
        let started = Instant::now();
        self.install(plan, &config);
        self.source.applied(&running_of(&state, &held));
        weir_metrics::config_apply::observe(took + started.elapsed());
        self.sync_leases(&state, &touched);
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
        self.show(state, held);
        Ok(result.committed)
    }

    /// Runs `plan` on the data plane, with the endpoints the endpoint sources give, and
    /// tells them the new config; only binding a listener can fail.
    fn take(&self, plan: Plan, config: &Arc<Config>) -> Result<(), ApplyError> {
        let runs = self.discovered.lock().unwrap().merge(config);
        match plan {
            Plan::Endpoints(pools) => self.proxy.update_pools(&runs, &pools),
            Plan::Whole(prepared) => self.proxy.install(prepared, &runs)?,
        }
        self.configured(config);
        Ok(())
    }

    fn install(&self, plan: Plan, config: &Arc<Config>) {
        if let Err(e) = self.take(plan, config) {
            // Only starting an already bound listener can fail here; the change stands.
            error!("committed change not fully applied: {e}");
        }
    }

    /// Re-reads the source (a file changed, SIGHUP; a watching source's event); on any error
    /// the running config stays.
    pub async fn refresh(&self) {
        let _one = self.writes.lock().await;
        let current = self.state();
        let running = self.running();
        let outside = match self.source.reread(&current) {
            Ok(Some(next)) => next,
            Ok(None) => {
                // A file re-read on SIGHUP says so; a watch's echo of this replica's own
                // commit is not news.
                if self.source.rereads() {
                    info!("config unchanged");
                }
                return;
            }
            Err(e) => {
                self.proxy.note_reload(false);
                error!("reload rejected, running config unchanged:\n{e}");
                return;
            }
        };
        if outside.admin_changed {
            warn!("[admin] changes take effect at the next start");
        }
        let state = outside.state.clone();
        // Only what the file changed is read again.
        let touched = held::differ(&current, &state);
        // A source others write too: what does not validate is held back, the rest taken.
        let holds = self.source.holds_back().then_some(&*running);
        let checked = {
            let mut model = self.model.lock().unwrap();
            let old = (model.config().admin.clone(), model.config().global.clone());
            let (admin, global) = compile::settings(&outside.preamble);
            let same_settings = (&admin, &global) == (&old.0, &old.1);
            model.set_settings(admin, global);
            let mut taken = false;
            // Endpoints alone (another replica's registration, say) take the same fast path
            // as a commit's; settings that changed need the whole config prepared.
            let keys = if holds.is_some() {
                &[][..]
            } else {
                &touched[..]
            };
            let r = check(
                &self.proxy,
                &mut model,
                holds,
                &state,
                keys,
                !same_settings,
                &mut taken,
            );
            if r.is_err() {
                model.set_settings(old.0, old.1);
                if taken {
                    rebuild(&mut model, &running);
                }
            }
            r
        };
        let started = Instant::now();
        match checked {
            Ok(Checked {
                config,
                plan,
                took,
                held,
            }) => match self.take(plan, &config) {
                Ok(()) => {
                    weir_metrics::config_apply::observe(took + started.elapsed());
                    self.proxy.note_reload(true);
                    info!("config reloaded: {}", weir_config::summary(&config));
                    // Not a renewal: only leases whose endpoint is gone are dropped.
                    self.sync_leases(&state, &[]);
                    *self.preamble.write().unwrap() = outside.preamble.clone();
                    self.source.accept(outside);
                    let state = Arc::new(state);
                    self.source.applied(&running_of(&state, &held));
                    self.show(state, held);
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

/// Applies what a watching source reports, until it stops or weir does; `now` when it
/// started from a fallback and the source's own config is to be taken at once.
async fn follow(
    config: std::sync::Weak<RunningConfig>,
    mut changes: tokio::sync::mpsc::Receiver<()>,
    now: bool,
) {
    if now {
        if let Some(config) = config.upgrade() {
            config.refresh().await;
        }
    }
    while changes.recv().await.is_some() {
        let Some(config) = config.upgrade() else {
            return;
        };
        config.refresh().await;
    }
}

/// What runs of `state`: itself, or with the running version of each held resource.
fn running_of(state: &Arc<State>, held: &Held) -> Arc<State> {
    match held.is_empty() {
        true => state.clone(),
        false => Arc::new(held::running(state, held)),
    }
}

/// Reads the whole model again from `state`, keeping its settings.
fn rebuild(model: &mut Resources, state: &State) {
    let (admin, global) = (model.config().admin.clone(), model.config().global.clone());
    match compile::model_with(state, admin, global) {
        Ok(m) => *model = m,
        Err(e) => error!("the running config no longer validates: {e}"),
    }
}

/// Validates `state` and prepares the data plane for it, so that a change that is committed
/// is known to apply. Without `running`, the `keys` resources of `state` must validate. With
/// `running` (a source that holds back what others wrote), `keys` (a change's own) must,
/// and every other resource in which `state` differs from `running` is taken as far as it
/// validates, the rest held back (`held.rs`), as is one of those that validates but cannot
/// be prepared here (its port taken on this host). A change to endpoints alone needs
/// nothing prepared: no listener, route or pool setting changed; `whole` prepares anyway.
fn check(
    proxy: &Proxy,
    model: &mut Resources,
    running: Option<&State>,
    state: &State,
    keys: &[(Kind, String)],
    whole: bool,
    taken: &mut bool,
) -> Result<Checked, Invalid> {
    let started = Instant::now();
    let (mut taken_keys, mut held) = match running {
        None => {
            compile::check(model, state, keys)?;
            *taken = true;
            (keys.to_vec(), Held::new())
        }
        Some(running) => {
            let a = held::admit(model, running, state, keys, taken)?;
            (a.taken, a.held)
        }
    };
    if !whole && taken_keys.iter().all(|(k, _)| *k == Kind::Endpoint) {
        let pools = taken_keys
            .iter()
            .map(|(_, n)| n.split('/').next().unwrap_or_default().to_owned())
            .collect();
        return Ok(Checked {
            config: Arc::new(model.config().clone()),
            plan: Plan::Endpoints(pools),
            took: started.elapsed(),
            held,
        });
    }
    loop {
        let config = Arc::new(model.config().clone());
        let field = match proxy.prepare(&config) {
            Ok(prepared) => {
                return Ok(Checked {
                    config,
                    plan: Plan::Whole(prepared),
                    took: started.elapsed(),
                    held,
                })
            }
            Err(e) => apply_error_field(&config, e),
        };
        // Valid, but this replica cannot run it (its port is taken here, a file missing):
        // what others wrote is held back too; a change's own is refused.
        let other = field
            .field
            .as_deref()
            .and_then(held::resource_of)
            .filter(|k| taken_keys.contains(k) && !keys.contains(k));
        let why = Invalid(vec![field.clone()]);
        // Each resource once: held, it is no longer taken.
        let held_too = match (running, other) {
            (Some(running), Some(k)) => {
                taken_keys.retain(|t| *t != k);
                held::hold(model, running, state, &mut held, k, why)
            }
            _ => false,
        };
        if !held_too {
            return Err(Invalid(vec![field]));
        }
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
        ApplyError::Tls(t) => Some(format!("listeners/{}/tls", t.listener())),
        ApplyError::PoolTls { pool, .. } => Some(format!("pools/{pool}/tls")),
        ApplyError::Filter(f) => Some(format!("filters/{}", f.name)),
        ApplyError::Start(_) => None,
    };
    FieldError {
        field,
        message: e.to_string(),
    }
}

fn state_keys(state: &State) -> Vec<(Kind, String)> {
    state.resources.keys().cloned().collect()
}
