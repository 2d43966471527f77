//! [`EtcdSource`]: weir-control's `Source` over etcd.
//!
//! - **Reads** come from this replica's copy (`known`): the first full read, then every event
//!   of a watch on the prefix, applied in revision order. A lost or compacted watch reads the
//!   whole prefix again at one revision, so a replica never applies a partial state.
//! - **Commits** read the prefix fresh, apply the changes (preconditions against what etcd
//!   holds now), validate the whole result, and write it in one etcd transaction that compares
//!   the revision key: if another replica committed in between, nothing is written and the
//!   commit starts over from the new state. So two changes that are each valid but together
//!   invalid can never both commit.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use etcd_client::{
    Certificate, Client, Compare, CompareOp, ConnectOptions, EventType, GetOptions, Identity,
    PutOptions, TlsOptions, Txn, TxnOp, WatchOptions,
};
use tokio::sync::mpsc;
use tracing::{info, warn};
use weir_control::compile::{ttl_of, Invalid};
use weir_control::source::{keys, refused, Check, Commit, Initial, Outside, Renewal, Source};
use weir_control::{Checked, HeartbeatError, Refused, StartError};
use weir_store::{Change, Kind, State, StoreError};

use crate::cache;
use crate::layout::{Bad, Entry, Layout};
use crate::url::StoreUrl;
use crate::why::{brief, Why};

/// How often a commit starts over when other replicas' commits keep landing first.
const ATTEMPTS: usize = 10;
/// How long a lost watch waits between reads of the prefix while etcd is away.
const RETRY: Duration = Duration::from_millis(500);

/// How to reach etcd.
pub struct Options {
    pub url: StoreUrl,
    /// CA certificate (PEM) that signs etcd's: the client talks TLS when given.
    pub ca: Option<PathBuf>,
    /// Client certificate and key (PEM), for etcd's `--client-cert-auth`.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// A file whose first line is `USER:PASSWORD`, for etcd's authentication.
    pub user_file: Option<PathBuf>,
    /// `[admin]` as TOML: validation must know the admin address.
    pub preamble: String,
    /// Where the last applied config is kept, to start from while etcd is away.
    pub cache: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--store-user-file {}: expected USER:PASSWORD on its first line", .0.display())]
    UserFile(PathBuf),
    #[error("--store-cert and --store-key go together")]
    HalfIdentity,
    #[error("--store-ca/--store-cert: {0}")]
    Tls(weir_tls::SettingsError),
    #[error("etcd at {url} refused user `{user}` of --store-user-file {}: {reason}", file.display())]
    Login {
        url: String,
        user: String,
        file: PathBuf,
        reason: String,
    },
    #[error("etcd at {url} is unreachable: {reason}")]
    Unreachable { url: String, reason: String },
}

pub struct EtcdSource {
    url: StoreUrl,
    layout: Layout,
    client: Client,
    rt: tokio::runtime::Handle,
    preamble: String,
    /// The config as this replica last read it: the first read, then the watch's events.
    known: Arc<Mutex<Arc<State>>>,
    /// Taken by `watch()`: a message whenever `known` changed.
    changed: Mutex<Option<mpsc::Receiver<()>>>,
    /// The etcd lease of each endpoint registered with a ttl, kept like `known`.
    leases: Arc<Mutex<Leases>>,
    /// Why etcd cannot be reached now; `None` while it can.
    problem: Problem,
    cache: PathBuf,
    login: Option<Login>,
    why: Arc<Why>,
}

/// `--store-user-file`'s user and password. The client logs in on its first request rather
/// than in `connect`: etcd-client's `with_user` logs in inside `Client::connect`, which then
/// fails while etcd is away (and weir with it) instead of starting from the cache or
/// waiting, as it does without a user.
#[derive(Clone)]
struct Login {
    user: String,
    password: String,
    file: PathBuf,
    done: Arc<AtomicBool>,
}

impl Login {
    fn read(file: &Path) -> Result<Login, ConnectError> {
        let text = read(file)?;
        let text = String::from_utf8_lossy(&text);
        let line = text.lines().next().unwrap_or_default().trim();
        let (user, password) = line
            .split_once(':')
            .ok_or_else(|| ConnectError::UserFile(file.to_owned()))?;
        Ok(Login {
            user: user.to_string(),
            password: password.to_string(),
            file: file.to_owned(),
            done: Arc::default(),
        })
    }

    /// Logs in unless done before. Afterwards the client logs in again by itself whenever
    /// etcd says the token expired.
    async fn ensure(&self, client: &Client) -> Result<(), etcd_client::Error> {
        if self.done.load(Ordering::Acquire) {
            return Ok(());
        }
        let creds = (self.user.clone(), self.password.clone());
        match client.clone().update_user(Some(creds)).await {
            Ok(()) => {}
            // As etcd's own Go client does: with authentication off, no token is needed.
            Err(etcd_client::Error::GRpcStatus(s))
                if s.message().contains("authentication is not enabled") =>
            {
                info!(
                    "etcd's authentication is off: the user of --store-user-file {} is not needed",
                    self.file.display()
                );
            }
            Err(e) => return Err(e),
        }
        self.done.store(true, Ordering::Release);
        Ok(())
    }
}

/// Why etcd cannot be reached, shared by the watch and the commits.
#[derive(Clone, Default)]
struct Problem(Arc<Mutex<Option<String>>>);

impl Problem {
    fn set(&self, why: Option<String>) {
        weir_proxy::metrics::config_store::set_up(why.is_none());
        let mut p = self.0.lock().unwrap();
        match (&*p, &why) {
            (None, Some(w)) => warn!(
                "config store unreachable ({w}); serving the last applied config, refusing changes"
            ),
            (Some(_), None) => info!("config store reachable again"),
            _ => {}
        }
        *p = why;
    }

    /// As `set`, without saying so: before the first config the caller says it better
    /// (there is no "last applied config" to serve yet).
    fn set_quietly(&self, why: String) {
        weir_proxy::metrics::config_store::set_up(false);
        *self.0.lock().unwrap() = Some(why);
    }

    fn get(&self) -> Option<String> {
        self.0.lock().unwrap().clone()
    }
}

/// Endpoint name → (lease id, the key's mod_revision when it was seen): a heartbeat through
/// any replica renews the lease whichever replica granted it.
type Leases = HashMap<String, (i64, i64)>;

/// A full read of the prefix.
struct Read {
    state: State,
    leases: Leases,
    /// The revision key's `mod_revision` (0 before the first commit): what a commit compares.
    committed_at: i64,
    bad: Vec<Bad>,
}

impl EtcdSource {
    /// Connects, reads the prefix, and starts watching it. Must run inside the runtime.
    pub async fn connect(o: Options) -> Result<EtcdSource, ConnectError> {
        let tls = o.ca.is_some() || o.cert.is_some();
        let mut opts = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(3))
            .with_timeout(Duration::from_secs(5))
            .with_keep_alive(Duration::from_secs(5), Duration::from_secs(3))
            // A member cut off from the others must not serve a watch that never fires.
            .with_require_leader(true);
        let login = o.user_file.as_deref().map(Login::read).transpose()?;
        if login.is_some() {
            // etcd's tokens expire: a simple token once unused for --auth-token-ttl (300 s
            // by default), a JWT at its ttl. Without this, every request after that fails
            // with "invalid auth token" until weir restarts; with it, the client logs in
            // again and retries the request once.
            opts = opts.with_auto_token_refresh(true);
        }
        let mut probe = None;
        if tls {
            let mut t = TlsOptions::new();
            if let Some(ca) = &o.ca {
                t = t.ca_certificate(Certificate::from_pem(read(ca)?));
            }
            match (&o.cert, &o.key) {
                (Some(c), Some(k)) => t = t.identity(Identity::from_pem(read(c)?, read(k)?)),
                (None, None) => {}
                _ => return Err(ConnectError::HalfIdentity),
            }
            opts = opts.with_tls(t);
            // The same trust and certificate for `Why`'s probe; building it also checks
            // the files now, naming the bad one, rather than at each handshake.
            let config = weir_tls::client::client_config(&weir_tls::ClientSettings {
                trust: match &o.ca {
                    Some(ca) => weir_tls::Trust::File(ca.clone()),
                    None => weir_tls::Trust::System,
                },
                identity: o.cert.clone().zip(o.key.clone()),
                alpn: vec![b"h2".to_vec()],
                ..Default::default()
            })
            .map_err(ConnectError::Tls)?;
            probe = Some((config, o.cert.clone()));
        }
        let scheme = if tls { "https" } else { "http" };
        let endpoints: Vec<String> = o
            .url
            .members
            .iter()
            .map(|m| format!("{scheme}://{m}"))
            .collect();
        // Lazy: it connects on the first request, so etcd may still be away.
        let client = Client::connect(endpoints, Some(opts)).await.map_err(|e| {
            ConnectError::Unreachable {
                url: o.url.to_string(),
                reason: e.to_string(),
            }
        })?;
        let layout = Layout::new(&o.url.prefix);
        let problem = Problem::default();
        let why = Arc::new(Why {
            members: o.url.members.clone(),
            tls: probe,
            user: login.as_ref().map(|l| (l.user.clone(), l.file.clone())),
            prefix: o.url.prefix.clone(),
        });
        let first = first_read(&client, &layout, &o, &problem, login.as_ref(), &why).await?;
        report(&first.bad);
        let from = first.state.revision as i64 + 1;
        let known = Arc::new(Mutex::new(Arc::new(first.state)));
        let leases = Arc::new(Mutex::new(first.leases));
        let (tx, rx) = mpsc::channel(1);
        tokio::spawn(watch(
            client.clone(),
            layout.clone(),
            Copy {
                known: known.clone(),
                leases: leases.clone(),
                problem: problem.clone(),
                login: login.clone(),
                why: why.clone(),
            },
            tx,
            from,
        ));
        Ok(EtcdSource {
            url: o.url,
            layout,
            client,
            rt: tokio::runtime::Handle::current(),
            preamble: o.preamble,
            known,
            changed: Mutex::new(Some(rx)),
            leases,
            problem,
            cache: o.cache,
            login,
            why,
        })
    }

    fn known(&self) -> Arc<State> {
        self.known.lock().unwrap().clone()
    }

    async fn unreachable(&self, e: etcd_client::Error) -> Refused {
        let why = self.why.explain(&e).await;
        self.problem.set(Some(why.clone()));
        Refused::Store(StoreError::Unreachable {
            store: self.url.to_string(),
            reason: why,
        })
    }

    async fn commit_now(
        &self,
        current: &State,
        changes: Vec<Change>,
        check: Check<'_, Checked>,
    ) -> Result<Commit<Checked>, Refused> {
        // What the model must take: the changes, and what others committed that this
        // replica has not applied yet (kept over attempts: each may have read a newer state).
        let mut touched: BTreeSet<(Kind, String)> = keys(&changes).into_iter().collect();
        let mut client = self.client.clone();
        for _ in 0..ATTEMPTS {
            let read = match read_all(
                &client,
                &self.layout,
                Some(&self.known()),
                self.login.as_ref(),
            )
            .await
            {
                Ok(read) => read,
                Err(e) => return Err(self.unreachable(e).await),
            };
            touched.extend(differ(current, &read.state));
            let applied =
                weir_store::apply::<Invalid>(read.state, changes.clone()).map_err(refused)?;
            let all: Vec<(Kind, String)> = touched.iter().cloned().collect();
            let checked = check(&applied.state, &all)?;
            let mut ops = Vec::with_capacity(applied.touched.len() + 1);
            let mut granted = Vec::new();
            for (kind, name) in &applied.touched {
                let key = self.layout.key(*kind, name);
                let Some(v) = applied.state.get(*kind, name) else {
                    ops.push(TxnOp::delete(key, None));
                    continue;
                };
                // A registration (an endpoint with a ttl) lives as long as an etcd lease:
                // renewed through any replica, expired by etcd, outliving weir restarts.
                let lease = match v.body.get("ttl").map(ttl_of) {
                    Some(Ok(ttl)) => {
                        let secs = ttl.as_secs_f64().ceil() as i64;
                        let id = match client.lease_grant(secs, None).await {
                            Ok(lease) => lease.id(),
                            Err(e) => return Err(self.unreachable(e).await),
                        };
                        granted.push((name.clone(), id));
                        Some(PutOptions::new().with_lease(id))
                    }
                    _ => None,
                };
                ops.push(TxnOp::put(key, v.body.to_string(), lease));
            }
            ops.push(TxnOp::put(
                self.layout.revision_key(),
                format!("{{\"by\":{}}}", std::process::id()),
                None,
            ));
            let txn = Txn::new()
                .when(vec![Compare::mod_revision(
                    self.layout.revision_key(),
                    CompareOp::Equal,
                    read.committed_at,
                )])
                .and_then(ops);
            let resp = match client.txn(txn).await {
                Ok(resp) => resp,
                Err(e) => return Err(self.unreachable(e).await),
            };
            if !resp.succeeded() {
                // Another replica committed after the read: read again, validate again.
                // Leases granted for it go unused; they end on their own at their ttl.
                continue;
            }
            self.problem.set(None);
            let revision = resp.header().map_or(0, |h| h.revision()) as u64;
            // Known before the watch echoes the commit: a heartbeat right after a
            // registration finds its lease.
            let mut leases = self.leases.lock().unwrap();
            for (name, id) in granted {
                leases.insert(name, (id, revision as i64));
            }
            drop(leases);
            let mut state = applied.state;
            state.revision = revision;
            for key in &applied.touched {
                if let Some(v) = state.resources.get_mut(key) {
                    v.version = revision;
                }
            }
            let committed = applied
                .committed
                .into_iter()
                .map(|mut c| {
                    c.revision = revision;
                    if c.version != 0 {
                        c.version = revision;
                    }
                    c
                })
                .collect();
            return Ok(Commit {
                committed,
                state: Arc::new(state),
                checked,
            });
        }
        Err(Refused::Store(StoreError::Contended {
            store: self.url.to_string(),
            attempts: ATTEMPTS,
        }))
    }
}

impl Source for EtcdSource {
    fn describe(&self) -> (&'static str, String) {
        ("etcd", self.url.to_string())
    }

    fn initial(&self) -> Result<Initial, StartError> {
        Ok(Initial {
            state: (*self.known()).clone(),
            preamble: self.preamble.clone(),
        })
    }

    fn accepts(&self, _changes: &[Change]) -> Result<(), Refused> {
        Ok(())
    }

    fn commit(
        &self,
        current: &Arc<State>,
        changes: Vec<Change>,
        check: Check<'_, Checked>,
    ) -> Result<Commit<Checked>, Refused> {
        // Called on a blocking thread (the store's commits wait for an fsync there too).
        self.rt.block_on(self.commit_now(current, changes, check))
    }

    fn watch(&self) -> Option<mpsc::Receiver<()>> {
        self.changed.lock().unwrap().take()
    }

    fn keeps_leases(&self) -> bool {
        true
    }

    fn applied(&self, state: &Arc<State>) {
        let (path, prefix, state) = (self.cache.clone(), self.layout.prefix(), state.clone());
        // Off the runtime: it fsyncs. Commits and reloads come one at a time, and a slow
        // disk at worst leaves an older cache.
        tokio::task::spawn_blocking(move || {
            if let Err(e) = cache::write(&path, &prefix, &state) {
                warn!("config store cache {} not written: {e}", path.display());
            }
        });
    }

    fn problem(&self) -> Option<String> {
        self.problem.get()
    }

    fn renew<'a>(&'a self, name: &'a str) -> Renewal<'a> {
        Box::pin(async move {
            let lease = self.leases.lock().unwrap().get(name).map(|(id, _)| *id);
            let id = lease.ok_or(HeartbeatError::NoLease)?;
            let unavailable = |e: etcd_client::Error| {
                HeartbeatError::Unavailable(format!("config store {}: {}", self.url, brief(&e)))
            };
            let mut client = self.client.clone();
            let (mut keeper, mut answers) =
                client.lease_keep_alive(id).await.map_err(unavailable)?;
            keeper.keep_alive().await.map_err(unavailable)?;
            match answers.message().await.map_err(unavailable)? {
                Some(a) if a.ttl() > 0 => Ok(Duration::from_secs(a.ttl() as u64)),
                // Expired meanwhile: etcd deletes the endpoint, and the watch brings that.
                _ => Err(HeartbeatError::NotFound),
            }
        })
    }

    fn reread(&self, current: &State) -> Result<Option<Outside>, String> {
        let known = self.known();
        // Not older than what runs: this replica's own commit may run ahead of its watch,
        // which then still delivers what others committed before it.
        if known.revision <= current.revision {
            return Ok(None);
        }
        if known.resources == current.resources {
            return Ok(None);
        }
        Ok(Some(Outside {
            state: (*known).clone(),
            preamble: self.preamble.clone(),
            admin_changed: false,
        }))
    }
}

fn read(path: &Path) -> Result<Vec<u8>, ConnectError> {
    std::fs::read(path).map_err(|source| ConnectError::Read {
        path: path.to_owned(),
        source,
    })
}

/// The whole prefix at one revision (logged in first, with a user). A key that does not
/// read keeps what `last` had.
async fn read_all(
    client: &Client,
    layout: &Layout,
    last: Option<&State>,
    login: Option<&Login>,
) -> Result<Read, etcd_client::Error> {
    if let Some(l) = login {
        l.ensure(client).await?;
    }
    let resp = client
        .kv_client()
        .get(layout.range(), Some(GetOptions::new().with_prefix()))
        .await?;
    let revision = resp.header().map_or(0, |h| h.revision());
    let revision_key = layout.revision_key();
    let committed_at = resp
        .kvs()
        .iter()
        .find(|kv| kv.key() == revision_key.as_bytes())
        .map_or(0, |kv| kv.mod_revision());
    let (state, bad) = layout.state(
        resp.kvs()
            .iter()
            .map(|kv| (kv.key(), kv.value(), kv.mod_revision())),
        revision,
        last,
    );
    let mut leases = Leases::new();
    for kv in resp.kvs() {
        note_lease(layout, &mut leases, kv.key(), kv.lease(), kv.mod_revision());
    }
    Ok(Read {
        state,
        leases,
        committed_at,
        bad,
    })
}

/// Notes which lease (0: none) endpoint `key` is attached to as of `revision`.
fn note_lease(layout: &Layout, leases: &mut Leases, key: &[u8], lease: i64, revision: i64) {
    let Ok((Some(Kind::Endpoint), Some(name))) = layout.name(key) else {
        return;
    };
    if leases.get(&name).is_some_and(|(_, seen)| *seen > revision) {
        return;
    }
    match lease {
        0 => leases.remove(&name),
        id => leases.insert(name, (id, revision)),
    };
}

/// The first config: etcd's; while etcd is away, the cached one (the replica starts and
/// says so); without a cache, it waits: the admin listener, and so `/readyz`, opens only
/// once there is a config to serve. etcd refusing the user and password is no reason to
/// wait: that ends weir, naming the file.
async fn first_read(
    client: &Client,
    layout: &Layout,
    o: &Options,
    problem: &Problem,
    login: Option<&Login>,
    why: &Why,
) -> Result<Read, ConnectError> {
    let mut waited = 0u32;
    loop {
        let e = match read_all(client, layout, None, login).await {
            Ok(read) => {
                problem.set(None);
                info!(
                    "config store: {} at revision {} ({} resources)",
                    o.url,
                    read.state.revision,
                    read.state.resources.len()
                );
                return Ok(read);
            }
            Err(e) => e,
        };
        if let (Some(l), etcd_client::Error::GRpcStatus(s)) = (login, &e) {
            if s.message().contains("authentication failed") {
                return Err(ConnectError::Login {
                    url: o.url.to_string(),
                    user: l.user.clone(),
                    file: l.file.clone(),
                    reason: s.message().to_string(),
                });
            }
        }
        let e = why.explain(&e).await;
        match cache::read(&o.cache, &layout.prefix()) {
            Ok(state) => {
                warn!(
                    "config store {} unreachable ({e}): starting from the config this replica last applied (revision {}, cached in {}); changes are refused until etcd answers",
                    o.url,
                    state.revision,
                    o.cache.display()
                );
                problem.set_quietly(e);
                return Ok(Read {
                    state,
                    leases: Leases::new(),
                    committed_at: 0,
                    bad: Vec::new(),
                });
            }
            Err(no_cache) => {
                if waited.is_multiple_of(10) {
                    warn!(
                        "config store {} unreachable ({e}) and no cached config ({no_cache}): waiting for it, not ready",
                        o.url
                    );
                }
                problem.set_quietly(e);
            }
        }
        waited += 1;
        tokio::time::sleep(RETRY).await;
    }
}

fn report(bad: &[Bad]) {
    weir_proxy::metrics::config_store::ignored(bad.len());
    for b in bad {
        warn!("config store: ignored {b}; the last good value (if any) stays");
    }
}

/// The resources in which `a` and `b` differ.
fn differ(a: &State, b: &State) -> Vec<(Kind, String)> {
    let changed = a
        .resources
        .iter()
        .filter(|(k, v)| b.resources.get(*k) != Some(*v))
        .map(|(k, _)| k.clone());
    let added = b
        .resources
        .keys()
        .filter(|k| !a.resources.contains_key(*k))
        .cloned();
    changed.chain(added).collect()
}

/// Follows the prefix from revision `from` until weir stops: each batch of events updates
/// `known` and says so on `tx`. A lost or compacted watch reads the prefix again.
async fn watch(
    mut client: Client,
    layout: Layout,
    copy: Copy,
    tx: mpsc::Sender<()>,
    mut from: i64,
) {
    loop {
        match follow(&mut client, &layout, &copy, &tx, &mut from).await {
            Ok(()) => return,
            Err(why) => warn!("config store: the watch stopped ({why}); reading the config again"),
        }
        loop {
            if tx.is_closed() {
                return;
            }
            let last = copy.known.lock().unwrap().clone();
            match read_all(&client, &layout, Some(&last), copy.login.as_ref()).await {
                Ok(read) => {
                    copy.problem.set(None);
                    report(&read.bad);
                    from = read.state.revision as i64 + 1;
                    *copy.leases.lock().unwrap() = read.leases;
                    *copy.known.lock().unwrap() = Arc::new(read.state);
                    let _ = tx.try_send(());
                    break;
                }
                Err(e) => {
                    copy.problem.set(Some(copy.why.explain(&e).await));
                    tokio::time::sleep(RETRY).await;
                }
            }
        }
    }
}

/// What the watch keeps up to date.
struct Copy {
    known: Arc<Mutex<Arc<State>>>,
    leases: Arc<Mutex<Leases>>,
    problem: Problem,
    login: Option<Login>,
    why: Arc<Why>,
}

/// One watch stream; `Ok` when weir no longer listens.
async fn follow(
    client: &mut Client,
    layout: &Layout,
    copy: &Copy,
    tx: &mpsc::Sender<()>,
    from: &mut i64,
) -> Result<(), String> {
    if let Some(l) = &copy.login {
        // Not logged in yet if the replica started from its cache.
        l.ensure(client).await.map_err(|e| brief(&e))?;
    }
    let opts = WatchOptions::new().with_prefix().with_start_revision(*from);
    let mut stream = client
        .watch(layout.range(), Some(opts))
        .await
        .map_err(|e| brief(&e))?;
    while let Some(resp) = stream.message().await.map_err(|e| brief(&e))? {
        if resp.compact_revision() != 0 || resp.canceled() {
            return Err(format!(
                "canceled by etcd: {} (compacted at revision {})",
                resp.cancel_reason(),
                resp.compact_revision()
            ));
        }
        if resp.events().is_empty() {
            continue;
        }
        let mut state = (**copy.known.lock().unwrap()).clone();
        let mut bad = Vec::new();
        let mut leases = copy.leases.lock().unwrap();
        for ev in resp.events() {
            let Some(kv) = ev.kv() else { continue };
            state.revision = state.revision.max(kv.mod_revision() as u64);
            let lease = match ev.event_type() {
                EventType::Put => kv.lease(),
                EventType::Delete => 0,
            };
            note_lease(layout, &mut leases, kv.key(), lease, kv.mod_revision());
            match ev.event_type() {
                EventType::Put => match layout.read(kv.key(), kv.value(), kv.mod_revision()) {
                    Ok(Entry::Resource(kind, name, v)) => {
                        state.resources.insert((kind, name), v);
                    }
                    Ok(Entry::Meta) => {}
                    Err(b) => bad.push(b),
                },
                EventType::Delete => {
                    if let Ok((Some(kind), Some(name))) = layout.name(kv.key()) {
                        state.resources.remove(&(kind, name));
                    }
                }
            }
        }
        drop(leases);
        report(&bad);
        *from = state.revision as i64 + 1;
        *copy.known.lock().unwrap() = Arc::new(state);
        // Full: a refresh is already due, and it reads the newest `known`.
        if let Err(mpsc::error::TrySendError::Closed(_)) = tx.try_send(()) {
            return Ok(());
        }
    }
    Err("the stream ended".into())
}
