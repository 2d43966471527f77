//! Reading the whole prefix: the first config (etcd's, or the cache while etcd is away), and
//! every full read after (a commit's, a lost watch's).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use etcd_client::{Client, GetOptions};
use tracing::{info, warn};
use weir_store::{Kind, State};

use crate::cache;
use crate::cache_error::CacheError;
use crate::connect_error::ConnectError;
use crate::layout::{Bad, Layout};
use crate::login::Login;
use crate::members::{Failed, Members};
use crate::options::Options;
use crate::problem::Problem;
use crate::why::Why;

/// How long a replica waits between reads while etcd is away.
pub(crate) const RETRY: Duration = Duration::from_millis(500);

/// Endpoint name → (lease id, the key's mod_revision when it was seen): a heartbeat through
/// any replica renews the lease whichever replica granted it.
pub(crate) type Leases = HashMap<String, (i64, i64)>;

/// A full read of the prefix.
pub(crate) struct Read {
    pub(crate) state: State,
    pub(crate) leases: Leases,
    /// The revision key's `mod_revision` (0 before the first commit): what a commit compares.
    pub(crate) committed_at: i64,
    pub(crate) bad: Vec<Bad>,
}

/// The whole prefix at one revision, from any member, by `deadline`. A key that does not
/// read keeps what `last` had.
pub(crate) async fn read_all(
    members: &Arc<Members>,
    layout: &Layout,
    last: Option<&State>,
    deadline: Instant,
) -> Result<Read, Failed> {
    let range = layout.range();
    let resp = members
        .call(deadline, |mut c: Client| {
            let range = range.clone();
            async move { c.get(range, Some(GetOptions::new().with_prefix())).await }
        })
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
pub(crate) fn note_lease(
    layout: &Layout,
    leases: &mut Leases,
    key: &[u8],
    lease: i64,
    revision: i64,
) {
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
pub(crate) async fn first_read(
    members: &Arc<Members>,
    layout: &Layout,
    o: &Options,
    problem: &Problem,
    login: Option<&Login>,
    why: &Why,
) -> Result<Read, ConnectError> {
    let mut waited = 0u32;
    loop {
        let e = match read_all(members, layout, None, members.deadline()).await {
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
        if let (Some(l), Some(etcd_client::Error::GRpcStatus(s))) = (login, e.refusal()) {
            if s.message().contains("authentication failed") {
                return Err(ConnectError::Login {
                    url: o.url.to_string(),
                    user: l.user.clone(),
                    file: l.file.clone(),
                    reason: s.message().to_string(),
                });
            }
        }
        // No hurry before the first config: the probes get their full time.
        let e = why.explain(&e, Duration::MAX).await;
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
                    // None is a first start; one that is there but cannot be used needs a
                    // look (it will be written again once etcd answers).
                    let what = match no_cache {
                        CacheError::Missing { .. } => "no cached config",
                        _ => "the cached config cannot be used",
                    };
                    warn!(
                        "config store {} unreachable ({e}) and {what} ({no_cache}): waiting for it, not ready",
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

pub(crate) fn report(bad: &[Bad]) {
    weir_metrics::config_store::ignored(bad.len());
    for b in bad {
        warn!("config store: ignored {b}; the last good value (if any) stays");
    }
}
