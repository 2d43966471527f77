//! The watch on the prefix: other replicas' commits (and anyone's writes) applied, in revision
//! order, to this replica's copy.

use std::sync::{Arc, Mutex};

use etcd_client::{EventType, WatchOptions};
use tokio::sync::mpsc;
use tokio::time::timeout;
use tracing::warn;
use weir_store::State;

use crate::brief::brief;
use crate::layout::{Entry, Layout};
use crate::members::{fails_the_member, Members};
use crate::problem::Problem;
use crate::read::{note_lease, read_all, report, Leases, RETRY};
use crate::why::Why;

/// Follows the prefix from revision `from` until weir stops: each batch of events updates
/// `known` and says so on `tx`. A lost or compacted watch reads the prefix again.
pub(crate) async fn watch(
    members: Arc<Members>,
    layout: Layout,
    copy: Copy,
    tx: mpsc::Sender<()>,
    mut from: i64,
) {
    loop {
        match follow(&members, &layout, &copy, &tx, &mut from).await {
            Ok(()) => return,
            Err(why) => warn!("config store: the watch stopped ({why}); reading the config again"),
        }
        loop {
            if tx.is_closed() {
                return;
            }
            let last = copy.known.lock().unwrap().clone();
            match read_all(&members, &layout, Some(&last), members.deadline()).await {
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
                    copy.problem
                        .set(Some(copy.why.explain(&e, members.timeout).await));
                    tokio::time::sleep(RETRY).await;
                }
            }
        }
    }
}

/// What the watch keeps up to date.
pub(crate) struct Copy {
    pub(crate) known: Arc<Mutex<Arc<State>>>,
    pub(crate) leases: Arc<Mutex<Leases>>,
    pub(crate) problem: Problem,
    pub(crate) why: Arc<Why>,
}

/// One watch stream, on one member; `Ok` when weir no longer listens. A member that fails
/// or goes silent is marked down, so that the read that follows asks another.
///
/// Silent: a hung member keeps its connection open and sends nothing, which an idle watch
/// cannot tell from no changes. So after a store timeout without a message, the watch asks
/// etcd for a progress report (any member that works answers at once); no answer to that
/// within another store timeout, and the member is taken for hung.
async fn follow(
    members: &Arc<Members>,
    layout: &Layout,
    copy: &Copy,
    tx: &mpsc::Sender<()>,
    from: &mut i64,
) -> Result<(), String> {
    let (i, mut client) = members.pick().await.map_err(|e| e.to_string())?;
    let broke = |why: String| {
        members.broke(i, &why);
        format!("etcd member {}: {why}", members.addr(i))
    };
    let failed = |e: etcd_client::Error| match fails_the_member(&e) {
        true => broke(brief(&e)),
        false => brief(&e),
    };
    let wait = members.timeout;
    let opts = WatchOptions::new().with_prefix().with_start_revision(*from);
    let mut stream = match timeout(wait, client.watch(layout.range(), Some(opts))).await {
        Ok(s) => s.map_err(failed)?,
        Err(_) => {
            return Err(broke(format!(
                "no answer within {wait:?} (--store-timeout)"
            )))
        }
    };
    let mut asked = false;
    loop {
        let resp = match timeout(wait, stream.message()).await {
            Ok(m) => m.map_err(failed)?,
            Err(_) if !asked => {
                stream.request_progress().await.map_err(failed)?;
                asked = true;
                continue;
            }
            Err(_) => {
                return Err(broke(format!(
                    "the watch got no answer within {:?} (twice --store-timeout)",
                    wait * 2
                )))
            }
        };
        asked = false;
        let Some(resp) = resp else {
            return Err(broke("the stream ended".into()));
        };
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
}
