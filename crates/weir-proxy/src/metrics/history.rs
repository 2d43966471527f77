//! The last five minutes of traffic, a sample a second: a task started with the proxy
//! reads the counters the stats read (off the request path, which counts nothing more for
//! it) and keeps the differences. They give the per-second rates of `/api/v1/stats` and,
//! per pool, the series of `/api/v1/stats/history`, so a dashboard opened now draws the
//! past minutes at once. Bounded: [`KEEP`] samples of 16 bytes per pool, of two numbers
//! for the totals, and one set of running counts per listener, route, pool and endpoint.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::metrics::outcome::{Tallies, UPSTREAM_5XX};
use weir_metrics::hist::{quantile, N};
use weir_pipeline::snapshot::Snapshot;
use weir_pipeline::snapshot::SnapshotCell;

/// Samples kept: five minutes, the dashboard's widest graph.
pub const KEEP: usize = 300;
pub const INTERVAL: Duration = Duration::from_secs(1);

/// Requests (or sessions) and errors since start: what a rate is the difference of.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Running {
    requests: u64,
    errors: u64,
}

/// Requests and errors per second over the last interval.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Rate {
    pub requests: f64,
    pub errors: f64,
}

/// A pool's part of one sample: 16 bytes, [`KEEP`] of them per pool.
#[derive(Debug, Clone, Copy)]
struct PoolPoint {
    requests: f32,
    errors: f32,
    /// The p99 of the answers' time to their head over the interval; NaN without any.
    p99_ms: f32,
    queue: u32,
}

const _: () = assert!(std::mem::size_of::<PoolPoint>() == 16);

/// What one sampling read, by the keys of [`Tallies`].
#[derive(Debug, Default)]
struct Reading {
    listeners: HashMap<Arc<str>, Running>,
    routes: HashMap<(Arc<str>, Arc<str>), Running>,
    pools: HashMap<Arc<str>, Running>,
    /// Failed tries and 5xx answers of each endpoint, and its answered tries.
    endpoints: HashMap<(Arc<str>, Arc<str>), Running>,
    /// Each pool's endpoints' time to the response head, summed.
    latency: HashMap<Arc<str>, [u64; N]>,
    queues: HashMap<Arc<str>, u32>,
}

impl Reading {
    fn of(snap: &Snapshot) -> Reading {
        let t = Tallies::of(snap);
        let running = |x: &crate::metrics::outcome::Tally| Running {
            requests: x.requests,
            errors: x.errors_total(),
        };
        let mut r = Reading {
            listeners: t
                .listeners
                .iter()
                .map(|(k, x)| (k.clone(), running(x)))
                .collect(),
            routes: t
                .routes
                .iter()
                .map(|(k, x)| (k.clone(), running(x)))
                .collect(),
            pools: t
                .pools
                .iter()
                .map(|(k, x)| (k.clone(), running(x)))
                .collect(),
            ..Default::default()
        };
        for (name, p) in &snap.pools {
            let mut buckets = [0u64; N];
            for e in &p.endpoints {
                for (b, n) in buckets.iter_mut().zip(e.metrics.upstream.counts()) {
                    *b += n;
                }
                let key = (name.clone(), e.addr_str.clone());
                let relayed_5xx = t
                    .endpoints
                    .get(&key)
                    .and_then(|x| x.errors.get(UPSTREAM_5XX))
                    .copied()
                    .unwrap_or(0);
                let requests = e
                    .metrics
                    .requests
                    .load(std::sync::atomic::Ordering::Relaxed);
                let errors = e.metrics.errors_total() + relayed_5xx;
                r.endpoints.insert(key, Running { requests, errors });
            }
            r.latency.insert(name.clone(), buckets);
            r.queues.insert(
                name.clone(),
                p.shared.queue.len().try_into().unwrap_or(u32::MAX),
            );
        }
        r
    }
}

/// The rates of the newest sample, by the keys of [`Tallies`].
#[derive(Debug, Default)]
pub struct Rates {
    pub listeners: HashMap<Arc<str>, Rate>,
    pub routes: HashMap<(Arc<str>, Arc<str>), Rate>,
    pub pools: HashMap<Arc<str>, Rate>,
    pub endpoints: HashMap<(Arc<str>, Arc<str>), Rate>,
}

/// Per-second rates from two readings `secs` apart. A series new since the last reading
/// started at zero; one whose counts went down (its label sets left with a reload) is 0.
fn rates<K: Clone + Eq + std::hash::Hash>(
    now: &HashMap<K, Running>,
    before: &HashMap<K, Running>,
    secs: f64,
) -> HashMap<K, Rate> {
    now.iter()
        .map(|(k, n)| {
            let b = before.get(k).copied().unwrap_or_default();
            let per_sec = |a: u64, b: u64| a.saturating_sub(b) as f64 / secs;
            let rate = Rate {
                requests: per_sec(n.requests, b.requests),
                errors: per_sec(n.errors, b.errors),
            };
            (k.clone(), rate)
        })
        .collect()
}

#[derive(Debug, Default)]
pub struct History {
    last: Option<(Instant, Reading)>,
    /// The newest sample's rates (all 0 until the second sample).
    pub rates: Rates,
    /// Samples taken since start; the newest kept is number `taken - 1`.
    taken: u64,
    /// When each kept sample was taken (Unix ms, increasing), oldest first.
    t: VecDeque<u64>,
    /// Every listener's requests and errors per second, summed: all traffic.
    total: VecDeque<Rate>,
    /// Each pool's samples, the newest last: as many as `t` has since the pool appeared.
    pools: HashMap<Arc<str>, VecDeque<PoolPoint>>,
}

impl History {
    /// Takes a sample of `snap` at `now` (`unix_ms` on the wall clock). The first only
    /// sets the counts later samples are differences from.
    pub fn sample(&mut self, snap: &Snapshot, now: Instant, unix_ms: u64) {
        let reading = Reading::of(snap);
        self.record(reading, now, unix_ms);
    }

    fn record(&mut self, reading: Reading, now: Instant, unix_ms: u64) {
        let Some((at, before)) = self.last.take() else {
            self.last = Some((now, reading));
            return;
        };
        let secs = now.saturating_duration_since(at).as_secs_f64().max(1e-3);
        self.rates = Rates {
            listeners: rates(&reading.listeners, &before.listeners, secs),
            routes: rates(&reading.routes, &before.routes, secs),
            pools: rates(&reading.pools, &before.pools, secs),
            endpoints: rates(&reading.endpoints, &before.endpoints, secs),
        };
        // A wall clock set back must not make the series go back in time.
        let t = self.t.back().map_or(unix_ms, |&last| unix_ms.max(last + 1));
        self.t.push_back(t);
        self.taken += 1;
        let total = self
            .rates
            .listeners
            .values()
            .fold(Rate::default(), |a, r| Rate {
                requests: a.requests + r.requests,
                errors: a.errors + r.errors,
            });
        self.total.push_back(total);
        // Pools gone from the config go with their history.
        self.pools
            .retain(|name, _| reading.latency.contains_key(name));
        for (name, buckets) in &reading.latency {
            let delta: Vec<u64> = match before.latency.get(name) {
                Some(b) => buckets
                    .iter()
                    .zip(b)
                    .map(|(n, b)| n.saturating_sub(*b))
                    .collect(),
                None => buckets.to_vec(),
            };
            let rate = self.rates.pools.get(name).copied().unwrap_or_default();
            let point = PoolPoint {
                requests: rate.requests as f32,
                errors: rate.errors as f32,
                p99_ms: quantile(&delta, 0.99).map_or(f32::NAN, |s| (s * 1000.0) as f32),
                queue: reading.queues.get(name).copied().unwrap_or(0),
            };
            self.pools.entry(name.clone()).or_default().push_back(point);
        }
        while self.t.len() > KEEP {
            self.t.pop_front();
            self.total.pop_front();
        }
        for points in self.pools.values_mut() {
            while points.len() > KEEP {
                points.pop_front();
            }
        }
        self.last = Some((now, reading));
    }

    /// The kept samples numbered `from` and later (all of them for 0).
    pub fn since(&self, from: u64) -> HistoryJson {
        let kept = self.t.len();
        let first = self.taken - kept as u64;
        let skip = (from.saturating_sub(first) as usize).min(kept);
        let mut pools: Vec<PoolSeries> = self
            .pools
            .iter()
            .map(|(name, points)| {
                let pad = kept - points.len();
                let at = |i: usize| i.checked_sub(pad).map(|j| &points[j]);
                let series = |f: &dyn Fn(&PoolPoint) -> f32| -> Vec<Option<f32>> {
                    let value = |p| Some(f(p)).filter(|v| !v.is_nan());
                    (skip..kept).map(|i| at(i).and_then(value)).collect()
                };
                PoolSeries {
                    name: name.to_string(),
                    requests_per_sec: series(&|p| p.requests),
                    errors_per_sec: series(&|p| p.errors),
                    p99_ms: series(&|p| p.p99_ms),
                    queue_depth: (skip..kept).map(|i| at(i).map(|p| p.queue)).collect(),
                }
            })
            .collect();
        pools.sort_by(|a, b| a.name.cmp(&b.name));
        HistoryJson {
            interval_ms: INTERVAL.as_millis() as u64,
            keep: KEEP,
            next: self.taken,
            t: self.t.iter().skip(skip).copied().collect(),
            total: TotalSeries {
                requests_per_sec: self.total.iter().skip(skip).map(|r| r.requests).collect(),
                errors_per_sec: self.total.iter().skip(skip).map(|r| r.errors).collect(),
            },
            pools,
        }
    }
}

/// `/api/v1/stats/history`: per-second samples, oldest first, as columns aligned with `t`.
#[derive(Debug, Serialize)]
pub struct HistoryJson {
    pub interval_ms: u64,
    /// Samples kept at most.
    pub keep: usize,
    /// The number the next sample will have: ask `?from=` it for only newer ones.
    pub next: u64,
    /// When each sample was taken, Unix milliseconds.
    pub t: Vec<u64>,
    pub total: TotalSeries,
    pub pools: Vec<PoolSeries>,
}

#[derive(Debug, Serialize)]
pub struct TotalSeries {
    pub requests_per_sec: Vec<f64>,
    pub errors_per_sec: Vec<f64>,
}

/// One pool's samples; `null` before the pool was in the config, and in `p99_ms` for
/// a second without answers.
#[derive(Debug, Serialize)]
pub struct PoolSeries {
    pub name: String,
    pub requests_per_sec: Vec<Option<f32>>,
    pub errors_per_sec: Vec<Option<f32>>,
    pub p99_ms: Vec<Option<f32>>,
    pub queue_depth: Vec<Option<u32>>,
}

/// Samples the data plane every [`INTERVAL`] into `history` until either is gone.
pub async fn run(shared: Weak<SnapshotCell>, history: Weak<Mutex<History>>) {
    let mut tick = tokio::time::interval(INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let (Some(shared), Some(history)) = (shared.upgrade(), history.upgrade()) else {
            return;
        };
        let snap = shared.snapshot.load_full();
        // Read outside the lock: the stats wait for the lock, never for the reading.
        let reading = Reading::of(&snap);
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        history
            .lock()
            .unwrap()
            .record(reading, Instant::now(), unix_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(pools: &[(&str, u64, u64, u64)]) -> Reading {
        let mut r = Reading::default();
        for &(name, requests, errors, slow) in pools {
            let name: Arc<str> = name.into();
            r.pools.insert(name.clone(), Running { requests, errors });
            r.listeners
                .insert(name.clone(), Running { requests, errors });
            let mut b = [0; N];
            b[6] = slow;
            r.latency.insert(name.clone(), b);
            r.queues.insert(name, 2);
        }
        r
    }

    #[test]
    fn samples_are_per_second_differences_kept_for_five_minutes() {
        let mut h = History::default();
        let start = Instant::now();
        let sec = |i: u64| start + Duration::from_secs(i);
        h.record(reading(&[("app", 0, 0, 0)]), sec(0), 1_000);
        assert_eq!(
            h.since(0).t.len(),
            0,
            "the first reading only sets the counts"
        );
        h.record(reading(&[("app", 10, 4, 10)]), sec(1), 2_000);
        h.record(
            reading(&[("app", 30, 4, 10), ("new", 5, 5, 0)]),
            sec(3),
            4_000,
        );
        assert_eq!(
            h.rates.pools[&Arc::from("app")],
            Rate {
                requests: 10.0,
                errors: 0.0
            }
        );
        let j = h.since(0);
        assert_eq!(j.t, [2_000, 4_000]);
        assert_eq!(j.next, 2);
        let app = &j.pools[0];
        assert_eq!(app.requests_per_sec, [Some(10.0), Some(10.0)]);
        assert_eq!(app.errors_per_sec, [Some(4.0), Some(0.0)]);
        // Ten answers in (5 ms, 10 ms] in the first second, none in the next two.
        assert_eq!(app.p99_ms[1], None);
        assert!((app.p99_ms[0].unwrap() - 9.95).abs() < 1e-5);
        assert_eq!(app.queue_depth, [Some(2), Some(2)]);
        // A pool new in the config: nothing before it was there.
        let new = &j.pools[1];
        assert_eq!(new.name, "new");
        assert_eq!(new.requests_per_sec, [None, Some(2.5)]);
        assert_eq!(j.total.errors_per_sec, [4.0, 2.5]);

        // Only newer samples from `next`; a pool removed goes with its history.
        h.record(reading(&[("app", 30, 4, 10)]), sec(4), 5_000);
        let j = h.since(2);
        assert_eq!(j.t, [5_000]);
        assert_eq!(j.pools.len(), 1);
        assert_eq!(j.pools[0].requests_per_sec, [Some(0.0)]);

        for i in 5..400 {
            h.record(reading(&[("app", 30, 4, 10)]), sec(i), i * 1000);
        }
        let j = h.since(0);
        assert_eq!(j.t.len(), KEEP);
        assert_eq!(j.pools[0].requests_per_sec.len(), KEEP);
        assert_eq!(j.next, 398);
        assert_eq!(*j.t.last().unwrap(), 399_000);
        assert_eq!(h.since(1_000).t.len(), 0);
    }

    #[test]
    fn a_clock_set_back_does_not_reorder_samples() {
        let mut h = History::default();
        let start = Instant::now();
        h.record(reading(&[]), start, 10_000);
        h.record(reading(&[]), start + INTERVAL, 11_000);
        h.record(reading(&[]), start + 2 * INTERVAL, 5_000);
        assert_eq!(h.since(0).t, [11_000, 11_001]);
    }
}
