//! Process-wide counters and gauges (one data plane per process): the config version,
//! reloads, open connections, and the gauge a guard holds for as long as it lives.

use std::sync::atomic::{AtomicI64, AtomicU64};

/// Process-wide counters and gauges (one data plane per process).
pub static GLOBAL: Global = Global {
    version: AtomicU64::new(0),
    reloads_ok: AtomicU64::new(0),
    reloads_failed: AtomicU64::new(0),
    client_open: AtomicI64::new(0),
    upstream_open: AtomicI64::new(0),
    tls_sni_ip_address: AtomicU64::new(0),
};

/// Adds one to a gauge for as long as it lives.
pub struct Held(&'static AtomicI64);

impl Held {
    pub fn new(g: &'static AtomicI64) -> Held {
        g.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Held(g)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[derive(Debug)]
pub struct Global {
    /// Configurations applied so far (the first is 1).
    pub version: AtomicU64,
    pub reloads_ok: AtomicU64,
    pub reloads_failed: AtomicU64,
    /// Client connections (HTTP and TCP) open.
    pub client_open: AtomicI64,
    /// Upstream connections open (idle ones are counted from the pools).
    pub upstream_open: AtomicI64,
    /// ClientHellos whose server name was an IP address (ignored by rustls, which would
    /// warn once per connection: the binary's log filter counts them here instead).
    pub tls_sni_ip_address: AtomicU64,
}
