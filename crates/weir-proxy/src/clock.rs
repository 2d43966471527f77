//! A monotonic millisecond clock shared by the whole process, cheap enough to
//! store in atomics (unlike `Instant`).

use std::sync::OnceLock;
use std::time::Instant;

static BASE: OnceLock<Instant> = OnceLock::new();

/// Milliseconds since the first call in this process.
#[inline]
pub fn now_ms() -> u64 {
    BASE.get_or_init(Instant::now).elapsed().as_millis() as u64
}
