//! `weir_config_apply_seconds`: how long a config change takes to validate and reach the
//! data plane (a store's fsync excluded), so an operator sees when changes get slow.

use std::sync::LazyLock;
use std::time::Duration;

use crate::hist::Histogram;

pub static APPLY: LazyLock<Histogram> = LazyLock::new(Histogram::default);

pub fn observe(d: Duration) {
    APPLY.observe(d);
}
