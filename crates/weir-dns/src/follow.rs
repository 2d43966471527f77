//! Following one name of one pool: resolve, keep the answer until its TTL (bounded by
//! `dns_min_ttl`/`dns_max_ttl`) runs out, resolve again. A failed, timed-out or empty answer
//! keeps the last good one serving and is tried again sooner, backing off; it is logged when
//! the state changes (not on every try) and every resolution is counted.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hickory_resolver::TokioResolver;
use tracing::{info, warn};
use weir_metrics::dns::{self, NameState};

use crate::answer::{resolve, Failure};
use crate::shared::Shared;
use crate::wanted::{Key, Settings};

/// A resolution that takes longer than this is a timeout, whatever the resolver's own tries.
const LIMIT: Duration = Duration::from_secs(15);
/// The longest wait between tries while a name fails.
const MAX_RETRY: Duration = Duration::from_secs(10);

pub(crate) async fn follow(
    key: Key,
    generation: u64,
    resolver: Arc<TokioResolver>,
    settings: Settings,
    shared: Arc<Shared>,
) {
    let (pool, named) = &key;
    let name = named.name.to_string();
    // The last result (`ok`, or a failure's label), for logging once per change of state.
    let mut last: Option<&'static str> = None;
    let mut retry = settings.min_ttl.max(Duration::from_secs(1));
    loop {
        let outcome = match tokio::time::timeout(LIMIT, resolve(&resolver, named)).await {
            Ok(o) => o,
            Err(_) => Err(Failure::Timeout),
        };
        let now = Instant::now();
        let (wait, failure, addresses): (_, Option<Failure>, Vec<String>) = match outcome {
            Ok(answer) => {
                retry = settings.min_ttl.max(Duration::from_secs(1));
                let ttl = answer.valid_until.saturating_duration_since(now);
                let wait = ttl.clamp(settings.min_ttl, settings.max_ttl);
                let addresses = answer
                    .endpoints
                    .iter()
                    .map(|e| e.addr.to_string())
                    .collect();
                if last != Some("ok") {
                    info!(
                        "pool {pool}: {name} resolves to {} addresses (asked again in {wait:?})",
                        answer.endpoints.len()
                    );
                }
                shared.answer(&key, generation, answer.endpoints);
                (wait, None, addresses)
            }
            Err(f) => {
                let kept = shared.kept(&key);
                if last != Some(f.result()) {
                    let keeping = match kept.len() {
                        0 => "the pool has no endpoint from it until it does".to_owned(),
                        n => format!("keeping its last {n} addresses"),
                    };
                    warn!(
                        "pool {pool}: {name} does not resolve now ({f}); {keeping}, trying again"
                    );
                }
                let wait = retry;
                retry = (retry * 2).min(MAX_RETRY.min(settings.max_ttl).max(wait));
                (wait, Some(f), kept)
            }
        };
        let result = failure.as_ref().map_or("ok", Failure::result);
        dns::count(pool, result);
        if !shared.current(&key, generation) {
            return;
        }
        dns::set_name(
            pool,
            &name,
            NameState {
                result,
                error: failure.as_ref().map(|f| f.to_string()),
                addresses,
                next_query: now + wait,
            },
        );
        last = Some(result);
        tokio::time::sleep(wait).await;
    }
}
