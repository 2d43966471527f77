//! weir's data plane as the control plane drives it: [`Proxy`].
//!
//! [`Proxy::apply`] turns a validated config into an immutable snapshot (weir-pipeline's
//! `Snapshot`) and publishes it with one atomic swap; the pipeline reads it once per request
//! or session, never under a lock. Listeners are bound and their accept loops run here
//! (`listener.rs`); endpoint changes alone update the pools in place (`pool_update.rs`);
//! `metrics/` renders what the layers below count (Prometheus text, the stats API, the
//! traffic history). The layers below, bottom up: weir-metrics, weir-transport, weir-codec,
//! weir-upstream, weir-http, weir-filters, weir-pipeline.

pub mod listener;
pub mod metrics;
mod pool_update;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use tracing::info;
use weir_config::Config;

use crate::listener::{BindError, Running};
use weir_http::accesslog;
use weir_pipeline::snapshot::{Registry, Snapshot, SnapshotCell};
use weir_transport::tls::{TlsServer, TlsSetupError};

/// The running data plane. Cheap to share; all methods take `&self`.
pub struct Proxy {
    shared: Arc<SnapshotCell>,
    /// The last minutes of traffic, sampled once a second (never by the data plane).
    history: Arc<Mutex<metrics::history::History>>,
    installed: Mutex<Installed>,
}

/// What the installed configs left running, guarded for `apply` and
/// `shutdown`: the listeners, the per-endpoint state that outlives
/// snapshots, the access log sinks and the drain settings.
struct Installed {
    /// By bind address.
    listeners: HashMap<SocketAddr, Running>,
    next_slot: usize,
    registry: Registry,
    sinks: accesslog::Sinks,
    drain_grace: Duration,
    shutting_down: bool,
}

/// A configuration whose sockets are bound and logs opened, ready for [`Proxy::install`].
pub struct Prepared {
    fresh: Vec<listener::Bound>,
    logs: HashMap<weir_config::AccessLog, accesslog::Sink>,
    /// TLS listeners' server sides, by listener name.
    listener_tls: HashMap<String, Arc<TlsServer>>,
    /// Every pool's TLS settings: kept where its tls table is unchanged, else built.
    tls: HashMap<Arc<str>, Arc<weir_transport::UpstreamTls>>,
    /// Every route filter, by name: kept where its settings are unchanged (with whatever
    /// state it holds), else built.
    filters: HashMap<String, Arc<weir_filters::Filter>>,
}

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error(transparent)]
    Bind(#[from] BindError),
    #[error("starting listener: {0}")]
    Start(#[from] std::io::Error),
    #[error(transparent)]
    Tls(#[from] TlsSetupError),
    #[error("access log {dest}: {source}")]
    AccessLog {
        dest: String,
        #[source]
        source: std::io::Error,
    },
    /// A file the pool's tls table names no longer reads (it did when the config was
    /// checked): the change is refused and the running TLS settings stay.
    #[error("pool `{pool}`: {source}")]
    PoolTls {
        pool: String,
        #[source]
        source: weir_transport::BuildError,
    },
    /// A route filter that cannot be built: the change is refused.
    #[error(transparent)]
    Filter(#[from] weir_filters::BuildError),
}

impl Proxy {
    /// An empty data plane; call [`Proxy::apply`] to give it a config. Must be
    /// called within a tokio runtime (it starts the idle-connection sweeper).
    pub fn new() -> Arc<Proxy> {
        let proxy = Arc::new(Proxy {
            shared: Arc::new(SnapshotCell {
                snapshot: ArcSwap::from_pointee(Snapshot::default()),
            }),
            history: Arc::default(),
            installed: Mutex::new(Installed {
                listeners: HashMap::new(),
                next_slot: 0,
                registry: Registry::default(),
                sinks: Default::default(),
                drain_grace: Duration::from_secs(30),
                shutting_down: false,
            }),
        });
        tokio::spawn(sweep(Arc::downgrade(&proxy.shared)));
        tokio::spawn(metrics::history::run(
            Arc::downgrade(&proxy.shared),
            Arc::downgrade(&proxy.history),
        ));
        proxy
    }

    /// Makes `cfg` the running configuration. New listeners are bound first;
    /// if any bind fails nothing changes. Then one snapshot swap, after which
    /// removed listeners stop accepting and drain.
    pub fn apply(&self, cfg: &Config) -> Result<(), ApplyError> {
        let prepared = self.prepare(cfg)?;
        self.install(prepared, cfg)
    }

    /// The part of [`Proxy::apply`] that can fail for reasons outside the config (a bind
    /// address in use, an access log that cannot be opened, a pool's CA file gone), done
    /// without changing anything.
    /// The store validates a change with it before committing, so that a committed change
    /// always applies. Dropping the result releases the new sockets.
    pub fn prepare(&self, cfg: &Config) -> Result<Prepared, ApplyError> {
        let mut installed = self.installed.lock().unwrap();
        let mut fresh = Vec::new();
        for l in cfg.listeners.values() {
            if !installed.listeners.contains_key(&l.bind)
                && !fresh.iter().any(|b: &listener::Bound| b.addr == l.bind)
            {
                fresh.push(listener::bind(l.bind, l.protocol)?);
            }
        }
        let mut logs = HashMap::new();
        for dest in cfg.listeners.values().filter_map(|l| l.access_log.as_ref()) {
            let sink = installed
                .sinks
                .get(dest)
                .map_err(|source| ApplyError::AccessLog {
                    dest: format!("{dest:?}"),
                    source,
                })?;
            logs.insert(dest.clone(), sink);
        }
        let mut listener_tls = HashMap::new();
        let mut attached: HashMap<&str, Vec<(String, weir_config::CertificateResource)>> =
            HashMap::new();
        for (name, c) in &cfg.certificates {
            attached
                .entry(c.listener.as_str())
                .or_default()
                .push((name.clone(), c.clone()));
        }
        for (name, l) in &cfg.listeners {
            let Some(settings) = &l.tls else { continue };
            let attached = attached.remove(name.as_str()).unwrap_or_default();
            // Unchanged settings and attached certificates keep the server (and its
            // sessions); a change reads the files again, and a pair that does not load fails
            // the change here.
            let server = match installed.registry.listener_tls.get(name) {
                Some(s)
                    if s.settings == *settings
                        && s.protocol == l.protocol
                        && s.attached == attached =>
                {
                    s.clone()
                }
                _ => TlsServer::build(name, l.protocol, settings, attached)?,
            };
            listener_tls.insert(name.clone(), server);
        }
        let mut tls = HashMap::new();
        for (name, p) in &cfg.pools {
            let Some(settings) = &p.tls else { continue };
            let name: Arc<str> = name.as_str().into();
            // Unchanged settings keep their config, and with it the sessions to resume.
            let built = match installed.registry.tls.get(&name) {
                Some(t) if t.settings == *settings => t.clone(),
                _ => weir_transport::UpstreamTls::build(&name, settings).map_err(|source| {
                    ApplyError::PoolTls {
                        pool: name.to_string(),
                        source,
                    }
                })?,
            };
            tls.insert(name, built);
        }
        let mut filters = HashMap::new();
        for (name, f) in &cfg.filters {
            let built = match installed.registry.filters.get(name) {
                Some((settings, built)) if settings == f => built.clone(),
                _ => Arc::new(weir_filters::Filter::build(name, f)?),
            };
            filters.insert(name.clone(), built);
        }
        Ok(Prepared {
            fresh,
            logs,
            listener_tls,
            tls,
            filters,
        })
    }

    /// Publishes `cfg`, which [`Proxy::prepare`] accepted; the listeners bound then start.
    pub fn install(&self, prepared: Prepared, cfg: &Config) -> Result<(), ApplyError> {
        let Prepared {
            fresh,
            logs,
            listener_tls,
            tls,
            filters,
        } = prepared;
        let mut installed = self.installed.lock().unwrap();
        let mut slots: HashMap<String, usize> = HashMap::new();
        let mut fresh_slots = Vec::new();
        for (name, l) in &cfg.listeners {
            let slot = match installed.listeners.get(&l.bind) {
                Some(r) => {
                    r.set_protocol(l.protocol);
                    r.slot
                }
                None => match fresh_slots.iter().find(|(a, _)| *a == l.bind) {
                    Some((_, s)) => *s,
                    None => {
                        let s = installed.next_slot;
                        installed.next_slot += 1;
                        fresh_slots.push((l.bind, s));
                        s
                    }
                },
            };
            slots.insert(name.clone(), slot);
        }

        let used: Vec<_> = logs.keys().cloned().collect();
        installed.sinks.retain(&used);
        let snapshot = Arc::new(Snapshot::build(
            cfg,
            &slots,
            &mut installed.registry,
            &logs,
            listener_tls,
            tls,
            filters,
        ));
        self.shared.snapshot.store(snapshot.clone());
        snapshot.install_queues();
        weir_metrics::GLOBAL
            .version
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        installed.drain_grace = cfg.global.drain_grace;

        for bound in fresh {
            let slot = fresh_slots
                .iter()
                .find(|(a, _)| *a == bound.addr)
                .map(|(_, s)| *s)
                .unwrap_or_default();
            let addr = bound.addr;
            let running = listener::start(bound, slot, self.shared.clone())?;
            match addr.port() {
                // Port 0 (replicas on one machine sharing one config): the port it got.
                0 => info!(bind = %addr, local = %running.local_addr, "listening"),
                _ => info!(bind = %addr, "listening"),
            }
            installed.listeners.insert(addr, running);
        }
        let keep: Vec<SocketAddr> = cfg.listeners.values().map(|l| l.bind).collect();
        let grace = installed.drain_grace;
        installed.listeners.retain(|addr, r| {
            let kept = keep.contains(addr);
            if !kept {
                info!(bind = %addr, "listener removed; draining");
                r.stop(grace);
            }
            kept
        });
        Ok(())
    }

    /// The Prometheus (OpenMetrics text) exposition of the current state.
    pub fn metrics_text(&self) -> String {
        metrics::render::render(&self.shared)
    }

    /// Traffic statistics for `/api/v1/stats`.
    pub fn stats(&self) -> metrics::stats::Stats {
        let snap = self.shared.snapshot.load();
        metrics::stats::stats(&snap, &self.history.lock().unwrap())
    }

    /// The per-second samples kept for `/api/v1/stats/history`, numbered `from` and later.
    pub fn stats_history(&self, from: u64) -> metrics::history::HistoryJson {
        self.history.lock().unwrap().since(from)
    }

    /// Counts a reload attempt that did not get as far as `apply` (an
    /// invalid file), or whose `apply` failed.
    pub fn note_reload(&self, ok: bool) {
        let c = if ok {
            &weir_metrics::GLOBAL.reloads_ok
        } else {
            &weir_metrics::GLOBAL.reloads_failed
        };
        c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Reopens access log files (after logrotate moved them): SIGUSR1.
    pub fn reopen_logs(&self) {
        accesslog::reopen();
    }

    /// Ready: a config is applied, its listeners are bound, and no shutdown
    /// has begun.
    pub fn is_ready(&self) -> bool {
        let installed = self.installed.lock().unwrap();
        !installed.shutting_down
            && weir_metrics::GLOBAL
                .version
                .load(std::sync::atomic::Ordering::Relaxed)
                > 0
    }

    /// The actual local address of each listener, by configured bind address.
    pub fn local_addrs(&self) -> Vec<(SocketAddr, SocketAddr)> {
        let installed = self.installed.lock().unwrap();
        installed
            .listeners
            .iter()
            .map(|(b, r)| (*b, r.local_addr))
            .collect()
    }

    /// Stops accepting everywhere, lets in-flight requests finish within the
    /// drain grace, then cuts what is left.
    pub async fn shutdown(&self) {
        let (listeners, grace) = {
            let mut installed = self.installed.lock().unwrap();
            installed.shutting_down = true;
            (
                std::mem::take(&mut installed.listeners),
                installed.drain_grace,
            )
        };
        for r in listeners.values() {
            r.drain.cancel();
            r.tracker.close();
        }
        let all = async {
            for r in listeners.values() {
                r.tracker.wait().await;
            }
        };
        if tokio::time::timeout(grace, all).await.is_err() {
            info!("drain grace of {grace:?} over; closing remaining connections");
            for r in listeners.values() {
                r.kill.cancel();
            }
            for r in listeners.values() {
                let _ = tokio::time::timeout(Duration::from_secs(1), r.tracker.wait()).await;
            }
        }
    }
}

/// Closes expired idle upstream connections, so that backends are not left
/// holding sockets weir will never reuse.
async fn sweep(shared: std::sync::Weak<SnapshotCell>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let snap = shared.snapshot.load_full();
        let now = Instant::now();
        for pool in snap.pools.values() {
            for ep in &pool.endpoints {
                ep.sweep(now);
            }
        }
    }
}
