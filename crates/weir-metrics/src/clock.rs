//! A monotonic millisecond clock shared by the whole process, cheap enough to
//! store in atomics (unlike `Instant`) and to read several times a request.
//!
//! On Linux it reads `CLOCK_MONOTONIC_COARSE`: the kernel's last tick, a
//! memory read in the vDSO without the TSC read and scaling of
//! `Instant::now` (a few ns instead of ~27 ns here). Its resolution is one
//! tick (1–4 ms), enough for what reads it: per-second metric windows and
//! retry budgets, EWMA decay, slow-start ramps, learned idle timeouts.

use std::sync::OnceLock;

static BASE: OnceLock<u64> = OnceLock::new();

/// Milliseconds since the first call in this process.
#[inline]
pub fn now_ms() -> u64 {
    let now = raw_ms();
    now.saturating_sub(*BASE.get_or_init(|| now))
}

#[cfg(target_os = "linux")]
fn raw_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a valid out pointer; it cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

#[cfg(not(target_os = "linux"))]
fn raw_ms() -> u64 {
    use std::time::Instant;
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_milliseconds_forward() {
        let a = super::now_ms();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let b = super::now_ms();
        assert!(b >= a + 20 && b < a + 1000, "{a} → {b}");
    }
}
