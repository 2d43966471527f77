//! Metrics and statistics. The data plane only ever touches atomics
//! (per-label-set counters, histograms, gauges kept in the runtime state);
//! everything is read and formatted at scrape time: Prometheus text by
//! `render`, the JSON of `/api/v1/stats` by `stats` (errors and status classes by
//! `outcome`), and once a second by the sampler of `history`.
pub mod history;
pub mod outcome;
pub mod proxy_protocol;
pub mod render;
pub mod sni;
pub mod stats;
