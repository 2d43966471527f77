//! A commit through this replica: read the prefix fresh, apply and validate the changes on
//! the whole result, and write it in one etcd transaction compared on the revision key; start
//! over when another replica committed in between. All of it within one store timeout, each
//! call on any member that answers (`members.rs`; the transaction as `outcome.rs` says).

use std::collections::BTreeSet;
use std::sync::Arc;

use etcd_client::{Client, Compare, CompareOp, PutOptions, Txn, TxnOp};
use weir_control::compile::{ttl_of, Invalid};
use weir_control::held::differ;
use weir_control::source::{keys, refused, Check, Commit};
use weir_control::{Checked, Refused};
use weir_store::{Change, Kind, State, StoreError};

use crate::outcome::{commit_id, revision_value, send, NotSent, Sent};
use crate::read::read_all;
use crate::source::EtcdSource;

/// How often a commit starts over when other replicas' commits keep landing first.
const ATTEMPTS: usize = 10;

impl EtcdSource {
    pub(crate) async fn commit_now(
        &self,
        current: &State,
        changes: Vec<Change>,
        check: Check<'_, Checked>,
    ) -> Result<Commit<Checked>, Refused> {
        // What the model must take: the changes, and what others committed that this
        // replica has not applied yet (kept over attempts: each may have read a newer state).
        let mut touched: BTreeSet<(Kind, String)> = keys(&changes).into_iter().collect();
        let deadline = self.members.deadline();
        // Every transaction of this commit writes it into the revision key (`outcome.rs`).
        let id = commit_id();
        for _ in 0..ATTEMPTS {
            let read =
                match read_all(&self.members, &self.layout, Some(&self.known()), deadline).await {
                    Ok(read) => read,
                    Err(e) => return Err(self.unreachable(&e, deadline).await),
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
                        // Safe on any member, again: a lease granted but not used ends
                        // at its ttl.
                        let grant = |mut c: Client| async move { c.lease_grant(secs, None).await };
                        let lease_id = match self.members.call(deadline, grant).await {
                            Ok(lease) => lease.id(),
                            Err(e) => return Err(self.unreachable(&e, deadline).await),
                        };
                        granted.push((name.clone(), lease_id));
                        Some(PutOptions::new().with_lease(lease_id))
                    }
                    _ => None,
                };
                ops.push(TxnOp::put(key, v.body.to_string(), lease));
            }
            let revision_key = self.layout.revision_key();
            ops.push(TxnOp::put(revision_key.clone(), revision_value(&id), None));
            let txn = Txn::new()
                .when(vec![Compare::mod_revision(
                    revision_key.clone(),
                    CompareOp::Equal,
                    read.committed_at,
                )])
                .and_then(ops);
            let sent = send(
                &self.members,
                txn,
                &revision_key,
                read.committed_at,
                &id,
                deadline,
            )
            .await;
            let revision = match sent {
                Ok(Sent::Applied(revision)) => revision as u64,
                // Another replica committed after the read: read again, validate again.
                // Leases granted for it go unused; they end on their own at their ttl.
                Ok(Sent::Beaten) => continue,
                Err(NotSent::Failed(e)) => return Err(self.unreachable(&e, deadline).await),
                Err(NotSent::Unknown(why)) => {
                    self.problem.set(Some(why.clone()));
                    return Err(Refused::Store(StoreError::Undecided {
                        store: self.url.to_string(),
                        reason: why,
                    }));
                }
            };
            self.problem.set(None);
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
