//! The etcd members of the store URL, each with a client of its own, used in turn and
//! failed over as etcd's Go client does: a call goes to the next member, and if that member
//! fails as a member fails (its connection refused or broken, no answer in time, no
//! leader), to each other in turn, all within the call's deadline (`--store-timeout`). An
//! answer of etcd's own (a refusal, a permission) ends the call: every member would say
//! the same.
//!
//! Why not etcd-client's one `Client` over every endpoint: it balances with tonic's
//! `balance_channel` (power of two choices), in which a member whose connection fails still
//! counts as ready (tonic's reconnect hands the connect error to the next request instead),
//! so a dead member keeps taking its share of requests and fails each one; nothing is tried
//! again on another member; and a hung member holds each request it gets until etcd-client's
//! timeout. Here a member that failed is marked down: calls go to the others first (and to
//! it only when they fail too), and a probe in the background asks it (after half a second,
//! then less often, at most 5 s apart) until it answers.
//!
//! Which calls may be tried again on another member is the caller's choice: reads, lease
//! grants and lease renewals are safe to repeat, so they use [`Members::call`]; the commit's
//! transaction is not simply repeated (see `outcome.rs`), so it uses [`Members::call_one`].

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use etcd_client::{Client, GetOptions};
use tracing::{info, warn};

use crate::brief::brief;
use crate::login::Login;

/// How long a down member's probe waits before it asks first, and at most between two.
const PROBE_FIRST: Duration = Duration::from_millis(500);
const PROBE_MAX: Duration = Duration::from_secs(5);

pub(crate) struct Members {
    list: Vec<Member>,
    /// Where the next call starts, so that calls go round the members.
    next: AtomicUsize,
    /// `--store-timeout`: what one call may take, every member tried.
    pub(crate) timeout: Duration,
    login: Option<Login>,
    /// A key the probe reads (with a linearizable read, as `etcdctl endpoint health` does).
    probe_key: String,
}

struct Member {
    /// `HOST:PORT`.
    addr: String,
    client: Client,
    /// With `--store-user-file`: logged in on this member's client.
    logged_in: AtomicBool,
    /// Failed, and has not answered since: asked last.
    down: AtomicBool,
    /// A probe is asking it.
    probing: AtomicBool,
}

/// How one member failed a call.
#[derive(Debug)]
pub(crate) enum Try {
    /// The member failed: connection, no leader, etcd's own timeout.
    Failed(etcd_client::Error),
    /// No answer within its share of the deadline.
    TimedOut(Duration),
    /// Not asked: the deadline had passed.
    NotAsked,
    /// etcd answered, and refused: the call ends here.
    Refused(etcd_client::Error),
}

/// Why a call failed on every member it was tried on.
#[derive(Debug)]
pub(crate) struct Failed {
    /// Each member asked, in order, and how it failed.
    pub(crate) tries: Vec<(String, Try)>,
    /// The store timeout, when the call ran out of it.
    pub(crate) out_of_time: Option<Duration>,
}

impl Members {
    pub(crate) fn new(
        clients: Vec<(String, Client)>,
        timeout: Duration,
        login: Option<Login>,
        probe_key: String,
    ) -> Members {
        Members {
            list: clients
                .into_iter()
                .map(|(addr, client)| Member {
                    addr,
                    client,
                    logged_in: AtomicBool::new(false),
                    down: AtomicBool::new(false),
                    probing: AtomicBool::new(false),
                })
                .collect(),
            next: AtomicUsize::new(0),
            timeout,
            login,
            probe_key,
        }
    }

    /// The deadline of a call that starts now.
    pub(crate) fn deadline(&self) -> Instant {
        Instant::now() + self.timeout
    }

    /// Runs `op` on the next member, and on each other in turn while they fail as members,
    /// within `deadline`. Each member gets an equal share of what is left, so that a hung
    /// one leaves time for the others.
    pub(crate) async fn call<T, F, Fut>(
        self: &Arc<Self>,
        deadline: Instant,
        mut op: F,
    ) -> Result<T, Failed>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let order = self.order();
        let mut tries = Vec::new();
        for (k, &i) in order.iter().enumerate() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                tries.push((self.list[i].addr.clone(), Try::NotAsked));
                continue;
            }
            match self
                .attempt(i, left / (order.len() - k) as u32, &mut op)
                .await
            {
                Ok(v) => return Ok(v),
                Err(t @ Try::Refused(_)) => {
                    tries.push((self.list[i].addr.clone(), t));
                    break;
                }
                Err(t) => tries.push((self.list[i].addr.clone(), t)),
            }
        }
        Err(self.failed(tries, deadline))
    }

    /// Runs `op` on the next member only, with its share of the time left (as if every
    /// member were to be asked), so that the caller can go on with another.
    pub(crate) async fn call_one<T, F, Fut>(
        self: &Arc<Self>,
        deadline: Instant,
        mut op: F,
    ) -> Result<T, Failed>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let i = self.order()[0];
        let left = deadline.saturating_duration_since(Instant::now());
        let t = if left.is_zero() {
            Try::NotAsked
        } else {
            match self
                .attempt(i, left / self.list.len() as u32, &mut op)
                .await
            {
                Ok(v) => return Ok(v),
                Err(t) => t,
            }
        };
        Err(self.failed(vec![(self.list[i].addr.clone(), t)], deadline))
    }

    /// A member for a long-lived call (the watch): the next one that is not down, logged in.
    /// Its index goes back to [`Members::broke`] if the call breaks.
    pub(crate) async fn pick(self: &Arc<Self>) -> Result<(usize, Client), Failed> {
        let i = self.order()[0];
        let deadline = self.deadline();
        let client = self.list[i].client.clone();
        match tokio::time::timeout(self.timeout, self.log_in(i)).await {
            Ok(Ok(())) => Ok((i, client)),
            Ok(Err(e)) if fails_the_member(&e) => {
                let t = Try::Failed(e);
                self.mark_down(i, &t);
                Err(self.failed(vec![(self.list[i].addr.clone(), t)], deadline))
            }
            Ok(Err(e)) => {
                Err(self.failed(vec![(self.list[i].addr.clone(), Try::Refused(e))], deadline))
            }
            Err(_) => {
                let t = Try::TimedOut(self.timeout);
                self.mark_down(i, &t);
                Err(self.failed(vec![(self.list[i].addr.clone(), t)], deadline))
            }
        }
    }

    /// Member `i`'s long-lived call broke (or went silent): it is down until it answers.
    pub(crate) fn broke(self: &Arc<Self>, i: usize, why: &str) {
        if !self.list[i].down.swap(true, Ordering::AcqRel) && self.list.len() > 1 {
            warn!(
                "etcd member {} failed ({why}); asking the other members until it answers",
                self.list[i].addr
            );
        }
        self.start_probe(i);
    }

    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    pub(crate) fn addr(&self, i: usize) -> &str {
        &self.list[i].addr
    }

    /// The members in the order a call asks them: from the next in turn, those not down
    /// first.
    fn order(&self) -> Vec<usize> {
        let n = self.list.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let turn = (0..n).map(|k| (start + k) % n);
        let (up, down): (Vec<usize>, Vec<usize>) =
            turn.partition(|&i| !self.list[i].down.load(Ordering::Acquire));
        up.into_iter().chain(down).collect()
    }

    /// `op` on member `i`, logged in first, within `share`.
    async fn attempt<T, F, Fut>(
        self: &Arc<Self>,
        i: usize,
        share: Duration,
        op: &mut F,
    ) -> Result<T, Try>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let client = self.list[i].client.clone();
        let run = async {
            self.log_in(i).await?;
            op(client).await
        };
        let t = match tokio::time::timeout(share, run).await {
            Ok(Ok(v)) => {
                self.mark_up(i);
                return Ok(v);
            }
            Ok(Err(e)) if fails_the_member(&e) => Try::Failed(e),
            Ok(Err(e)) => {
                // etcd answered: the member works.
                self.mark_up(i);
                return Err(Try::Refused(e));
            }
            Err(_) => Try::TimedOut(share),
        };
        self.mark_down(i, &t);
        Err(t)
    }

    async fn log_in(&self, i: usize) -> Result<(), etcd_client::Error> {
        match &self.login {
            Some(l) => {
                l.ensure(&self.list[i].client, &self.list[i].logged_in)
                    .await
            }
            None => Ok(()),
        }
    }

    fn failed(&self, tries: Vec<(String, Try)>, deadline: Instant) -> Failed {
        let refused = matches!(tries.last(), Some((_, Try::Refused(_))));
        Failed {
            out_of_time: (!refused && Instant::now() >= deadline).then_some(self.timeout),
            tries,
        }
    }

    fn mark_up(&self, i: usize) {
        if self.list[i].down.swap(false, Ordering::AcqRel) && self.list.len() > 1 {
            info!("etcd member {} answers again", self.list[i].addr);
        }
    }

    fn mark_down(self: &Arc<Self>, i: usize, why: &Try) {
        self.broke(i, &why.to_string());
    }

    /// Asks member `i` until it answers, unless a probe already does.
    fn start_probe(self: &Arc<Self>, i: usize) {
        if self.list[i].probing.swap(true, Ordering::AcqRel) {
            return;
        }
        let members = self.clone();
        tokio::spawn(async move {
            let mut wait = PROBE_FIRST;
            while members.list[i].down.load(Ordering::Acquire) {
                tokio::time::sleep(wait).await;
                let key = members.probe_key.clone();
                let read = |mut c: Client| {
                    let key = key.clone();
                    async move {
                        c.get(key, Some(GetOptions::new().with_count_only()))
                            .await
                            .map(|_| ())
                    }
                };
                // Not through `attempt`: a probe that fails says nothing new.
                let client = members.list[i].client.clone();
                let asked = async {
                    members.log_in(i).await?;
                    read(client).await
                };
                if let Ok(Ok(())) = tokio::time::timeout(members.timeout, asked).await {
                    members.mark_up(i);
                }
                wait = (wait * 2).min(PROBE_MAX);
            }
            members.list[i].probing.store(false, Ordering::Release);
            // Marked down again between the loop's last look and now: probe again.
            if members.list[i].down.load(Ordering::Acquire) {
                members.start_probe(i);
            }
        });
    }
}

/// The member failed, rather than etcd refusing the request: another member may answer.
pub(crate) fn fails_the_member(e: &etcd_client::Error) -> bool {
    use etcd_client::Error as E;
    match e {
        // No connection (refused, broken, TLS), or etcd's own: no leader, leader changed,
        // request timed out (all UNAVAILABLE), and deadlines.
        E::GRpcStatus(s) => {
            std::error::Error::source(s).is_some()
                || matches!(
                    s.code(),
                    tonic::Code::Unavailable
                        | tonic::Code::DeadlineExceeded
                        | tonic::Code::Cancelled
                        | tonic::Code::Unknown
                )
        }
        E::TransportError(_) | E::IoError(_) | E::WatchError(_) | E::LeaseKeepAliveError(_) => true,
        _ => false,
    }
}

impl Failed {
    /// etcd's refusal that ended the call, if it was one.
    pub(crate) fn refusal(&self) -> Option<&etcd_client::Error> {
        match self.tries.last() {
            Some((_, Try::Refused(e))) => Some(e),
            _ => None,
        }
    }

    /// No member got the request: each was not asked, or refused the connection.
    pub(crate) fn never_sent(&self) -> bool {
        self.tries.iter().all(|(_, t)| match t {
            Try::NotAsked => true,
            Try::Failed(e) => connection_refused(e),
            _ => false,
        })
    }

    /// The members whose connection broke, and how (for `why.rs`'s probe).
    pub(crate) fn broken(&self) -> impl Iterator<Item = (&str, &etcd_client::Error)> {
        self.tries.iter().filter_map(|(m, t)| match t {
            Try::Failed(e) => Some((m.as_str(), e)),
            _ => None,
        })
    }
}

/// The connection was refused: the request never left.
fn connection_refused(e: &etcd_client::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = match e {
        etcd_client::Error::GRpcStatus(s) => std::error::Error::source(s),
        etcd_client::Error::TransportError(t) => std::error::Error::source(t),
        _ => None,
    };
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::ConnectionRefused {
                return true;
            }
        }
        cause = c.source();
    }
    false
}

impl fmt::Display for Try {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Try::Failed(e) | Try::Refused(e) => f.write_str(&brief(e)),
            Try::TimedOut(d) => write!(f, "no answer within {d:.1?}"),
            Try::NotAsked => f.write_str("not asked, no time left"),
        }
    }
}

impl fmt::Display for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(e) = self.refusal() {
            return f.write_str(&brief(e));
        }
        if let Some(t) = self.out_of_time {
            write!(f, "no answer within {t:?} (--store-timeout): ")?;
        }
        let tries: Vec<String> = self
            .tries
            .iter()
            .filter(|(_, t)| !matches!(t, Try::NotAsked))
            .map(|(m, t)| format!("{m}: {t}"))
            .collect();
        f.write_str(&tries.join("; "))
    }
}
