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

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use etcd_client::{Certificate, Client, ConnectOptions, Identity, TlsOptions};
use tokio::sync::mpsc;
use tracing::warn;
use weir_control::source::{Check, Commit, Initial, Outside, Renewal, Source};
use weir_control::{Checked, HeartbeatError, Refused, StartError};
use weir_store::{Change, State, StoreError};

use crate::cache;
use crate::cache_error::CacheError;
use crate::connect_error::ConnectError;
use crate::layout::Layout;
use crate::login::{read_file, Login};
use crate::members::{Failed, Members};
use crate::options::Options;
use crate::problem::Problem;
use crate::read::{first_read, report, Leases};
use crate::url::StoreUrl;
use crate::watch::{watch, Copy};
use crate::why::Why;

pub struct EtcdSource {
    pub(crate) url: StoreUrl,
    pub(crate) layout: Layout,
    pub(crate) members: Arc<Members>,
    pub(crate) rt: tokio::runtime::Handle,
    pub(crate) preamble: String,
    /// The config as this replica last read it: the first read, then the watch's events.
    pub(crate) known: Arc<Mutex<Arc<State>>>,
    /// Taken by `watch()`: a message whenever `known` changed.
    pub(crate) changed: Mutex<Option<mpsc::Receiver<()>>>,
    /// The etcd lease of each endpoint registered with a ttl, kept like `known`.
    pub(crate) leases: Arc<Mutex<Leases>>,
    /// Why etcd cannot be reached now; `None` while it can.
    pub(crate) problem: Problem,
    pub(crate) cache: PathBuf,
    pub(crate) why: Arc<Why>,
}

impl EtcdSource {
    /// Connects, reads the prefix, and starts watching it. Must run inside the runtime.
    pub async fn connect(o: Options) -> Result<EtcdSource, ConnectError> {
        let tls = o.ca.is_some() || o.cert.is_some();
        let mut opts = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(3).min(o.timeout))
            // A ceiling: each call's own deadline is shorter.
            .with_timeout(o.timeout)
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
                t = t.ca_certificate(Certificate::from_pem(read_file(ca)?));
            }
            match (&o.cert, &o.key) {
                (Some(c), Some(k)) => {
                    t = t.identity(Identity::from_pem(read_file(c)?, read_file(k)?))
                }
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
        // A client per member: see members.rs for why not one over all of them.
        let mut clients = Vec::new();
        for m in &o.url.members {
            // Lazy: it connects on the first request, so etcd may still be away.
            let client = Client::connect([format!("{scheme}://{m}")], Some(opts.clone()))
                .await
                .map_err(|e| ConnectError::Unreachable {
                    url: o.url.to_string(),
                    reason: e.to_string(),
                })?;
            clients.push((m.clone(), client));
        }
        let layout = Layout::new(&o.url.prefix);
        let members = Arc::new(Members::new(
            clients,
            o.timeout,
            login.clone(),
            layout.revision_key(),
        ));
        let problem = Problem::default();
        let why = Arc::new(Why {
            tls: probe,
            user: login.as_ref().map(|l| (l.user.clone(), l.file.clone())),
            prefix: o.url.prefix.clone(),
        });
        let first = first_read(&members, &layout, &o, &problem, login.as_ref(), &why).await?;
        report(&first.bad);
        let from = first.state.revision as i64 + 1;
        let known = Arc::new(Mutex::new(Arc::new(first.state)));
        let leases = Arc::new(Mutex::new(first.leases));
        let (tx, rx) = mpsc::channel(1);
        tokio::spawn(watch(
            members.clone(),
            layout.clone(),
            Copy {
                known: known.clone(),
                leases: leases.clone(),
                problem: problem.clone(),
                why: why.clone(),
            },
            tx,
            from,
        ));
        Ok(EtcdSource {
            url: o.url,
            layout,
            members,
            rt: tokio::runtime::Handle::current(),
            preamble: o.preamble,
            known,
            changed: Mutex::new(Some(rx)),
            leases,
            problem,
            cache: o.cache,
            why,
        })
    }

    pub(crate) fn known(&self) -> Arc<State> {
        self.known.lock().unwrap().clone()
    }

    /// A call that failed on every member, as the refusal a write gets: explained with
    /// what is left of `deadline`, so that the answer still comes within it.
    pub(crate) async fn unreachable(&self, e: &Failed, deadline: Instant) -> Refused {
        let left = deadline.saturating_duration_since(Instant::now());
        let why = self.why.explain(e, left).await;
        self.problem.set(Some(why.clone()));
        Refused::Store(StoreError::Unreachable {
            store: self.url.to_string(),
            reason: why,
        })
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
            // A renewal is safe to repeat, so on any member that answers.
            let keep_alive = |mut c: Client| async move {
                let (mut keeper, mut answers) = c.lease_keep_alive(id).await?;
                keeper.keep_alive().await?;
                answers.message().await
            };
            let deadline = self.members.deadline();
            match self.members.call(deadline, keep_alive).await {
                Ok(Some(a)) if a.ttl() > 0 => Ok(Duration::from_secs(a.ttl() as u64)),
                // Expired meanwhile: etcd deletes the endpoint, and the watch brings that.
                Ok(_) => Err(HeartbeatError::NotFound),
                Err(e) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    Err(HeartbeatError::Unavailable(format!(
                        "config store {}: {}",
                        self.url,
                        self.why.explain(&e, left).await
                    )))
                }
            }
        })
    }

    fn holds_back(&self) -> bool {
        true
    }

    fn fallback(&self) -> Option<(State, String)> {
        let state = match cache::read(&self.cache, &self.layout.prefix()) {
            Ok(state) => state,
            // A first start: nothing cached yet, nothing to say.
            Err(CacheError::Missing { .. }) => return None,
            Err(e) => {
                warn!("the cached config cannot be used ({e}): there is nothing to start from while the stored configuration does not validate");
                return None;
            }
        };
        let from = format!(
            "revision {}, cached in {}",
            state.revision,
            self.cache.display()
        );
        Some((state, from))
    }

    fn reread(&self, current: &State) -> Result<Option<Outside>, String> {
        let known = self.known();
        // Not older than what runs: this replica's own commit may run ahead of its watch,
        // which then still delivers what others committed before it. At the same revision
        // it may differ: writes that are not commits (a lease's end), or the cache started
        // from.
        if known.revision < current.revision {
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
