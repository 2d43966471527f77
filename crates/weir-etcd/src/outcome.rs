//! A commit's transaction sent to etcd, and what became of it when its answer was lost.
//!
//! A transaction whose member died or did not answer in time may have been applied or not:
//! etcd may have committed it before the connection broke, and a hung member may still
//! pass it on once it goes on. Sending it again to another member is safe all the same,
//! because every transaction of a commit compares the revision key's `mod_revision` with
//! the one the commit read (`compared`) and writes that key: of all transactions comparing
//! the same `compared`, at most one can ever apply, since the first that does moves the key
//! on and every other then fails its compare, now or whenever it reaches etcd. So the
//! change is never applied twice. What the compare cannot say is *whose* transaction won;
//! for that each commit writes an id of its own into the revision key, and the key's
//! history says which commit came first after `compared`: this one (applied: the answer
//! is success, at that revision), another (this one can never apply: the commit starts
//! over on the new state, as after any lost race), or none yet (the same transaction is
//! sent again). Retrying blindly instead would answer a change that was applied as
//! refused: its second copy fails the compare, and the commit started over would find its
//! own change there ("already exists"). This is also why etcd's Go client never retries a
//! transaction whose request may have reached etcd; here the compare makes it safe.
//!
//! When even that cannot be found out by the deadline, the write answers 503 saying that
//! the change may have been applied (`StoreError::Undecided`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use etcd_client::{Client, Txn, WatchOptions};
use tracing::info;

use crate::members::{Failed, Members};

/// What a sent transaction did.
pub(crate) enum Sent {
    /// It was applied, at this revision.
    Applied(i64),
    /// Its compare failed: another commit came first.
    Beaten,
}

/// Why a transaction's outcome is not known to be "applied".
pub(crate) enum NotSent {
    /// Not applied: no member took it, or etcd refused it.
    Failed(Failed),
    /// Its answer was lost and what became of it could not be found out in time.
    Unknown(String),
}

/// The commit that came first after `compared`.
enum After {
    Nothing,
    Ours(i64),
    Theirs,
}

/// A new commit id: unique to this process and this commit.
pub(crate) fn commit_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}-{nanos}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The revision key's value for commit `id`.
pub(crate) fn revision_value(id: &str) -> String {
    serde_json::json!({"by": std::process::id(), "commit": id}).to_string()
}

/// Sends `txn`, which compares the revision key at `revision_key` with `compared` and
/// writes commit `id` into it, until its outcome is known or `deadline` passes.
pub(crate) async fn send(
    members: &Arc<Members>,
    txn: Txn,
    revision_key: &str,
    compared: i64,
    id: &str,
    deadline: Instant,
) -> Result<Sent, NotSent> {
    // An earlier copy's answer was lost: it may be the one that applied.
    let mut lost: Option<String> = None;
    // Copies no member took (connection refused): one more member each time.
    let mut untaken = 0;
    loop {
        let sent = members
            .call_one(deadline, |mut c: Client| {
                let txn = txn.clone();
                async move { c.txn(txn).await }
            })
            .await;
        match sent {
            Ok(r) if r.succeeded() => {
                return Ok(Sent::Applied(r.header().map_or(0, |h| h.revision())))
            }
            Ok(_) if lost.is_none() => return Ok(Sent::Beaten),
            // Beaten, maybe by the lost copy: found out below.
            Ok(_) => {}
            // Surely not applied: etcd refused it, or no member took it.
            Err(f) if f.refusal().is_some() || f.never_sent() => {
                untaken += 1;
                let give_up =
                    f.refusal().is_some() || f.out_of_time.is_some() || untaken >= members.len();
                match (&lost, give_up) {
                    (None, true) => return Err(NotSent::Failed(f)),
                    (None, false) => continue,
                    (Some(l), true) if f.out_of_time.is_some() => {
                        return Err(NotSent::Unknown(format!(
                            "{l}; no time left to find out whether etcd applied it"
                        )))
                    }
                    // Find out about the lost copy below.
                    _ => {}
                }
            }
            Err(f) => lost = Some(f.to_string()),
        }
        let lost_why = lost.as_deref().unwrap_or_default();
        match first_after(members, revision_key, compared, id, deadline).await {
            Ok(After::Ours(revision)) => {
                info!("config store: a commit's answer was lost ({lost_why}); etcd had applied it, at revision {revision}");
                return Ok(Sent::Applied(revision));
            }
            Ok(After::Theirs) => {
                info!("config store: a commit's answer was lost ({lost_why}); another commit came first, so it starts over");
                return Ok(Sent::Beaten);
            }
            Ok(After::Nothing) => {
                info!("config store: a commit's answer was lost ({lost_why}); etcd has not applied it: sending it again");
                continue;
            }
            Err(why) => {
                return Err(NotSent::Unknown(format!(
                    "{lost_why}; finding out whether etcd applied it: {why}"
                )))
            }
        }
    }
}

/// The commit that came first after `compared`: from the revision key as it is now, or,
/// if another commit came since, from the key's history.
async fn first_after(
    members: &Arc<Members>,
    revision_key: &str,
    compared: i64,
    id: &str,
    deadline: Instant,
) -> Result<After, String> {
    let key = revision_key.to_string();
    let now = members
        .call(deadline, |mut c: Client| {
            let key = key.clone();
            async move { c.get(key, None).await }
        })
        .await
        .map_err(|f| f.to_string())?;
    let Some(kv) = now.kvs().first() else {
        return Ok(After::Nothing);
    };
    if kv.mod_revision() <= compared {
        return Ok(After::Nothing);
    }
    if id_of(kv.value()).as_deref() == Some(id) {
        return Ok(After::Ours(kv.mod_revision()));
    }
    let first = members
        .call(deadline, |mut c: Client| {
            let key = key.clone();
            async move {
                let opts = WatchOptions::new().with_start_revision(compared + 1);
                let mut stream = c.watch(key, Some(opts)).await?;
                while let Some(resp) = stream.message().await? {
                    if resp.compact_revision() != 0 {
                        return Ok(None);
                    }
                    if let Some(kv) = resp.events().first().and_then(|e| e.kv()) {
                        return Ok(Some((kv.mod_revision(), id_of(kv.value()))));
                    }
                }
                Err(etcd_client::Error::WatchError("the watch ended".into()))
            }
        })
        .await
        .map_err(|f| f.to_string())?;
    match first {
        Some((revision, Some(by))) if by == id => Ok(After::Ours(revision)),
        Some(_) => Ok(After::Theirs),
        None => Err(format!(
            "etcd compacted the revisions after {compared}, which would tell"
        )),
    }
}

/// The commit id in a revision key's value.
fn id_of(value: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(value).ok()?;
    v.get("commit")?.as_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revision_value_carries_its_commit_id() {
        let (a, b) = (commit_id(), commit_id());
        assert_ne!(a, b);
        assert_eq!(
            id_of(revision_value(&a).as_bytes()).as_deref(),
            Some(a.as_str())
        );
        assert_eq!(id_of(br#"{"by":12}"#), None);
        assert_eq!(id_of(b"not json"), None);
    }
}
