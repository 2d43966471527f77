//! The backend's `Keep-Alive: timeout=N` header: it will close an idle
//! connection after N seconds, so weir must stop reusing it well before.

use std::time::Duration;

use http::HeaderMap;

/// The idle time to allow for a connection whose last response carried these
/// headers: the pool's `idle_timeout`, lowered to 3/4 of an announced
/// `Keep-Alive: timeout=N` so that our reuse never races the backend's close.
pub fn idle_allowance(headers: &HeaderMap, pool_idle: Duration) -> Duration {
    static KEEP_ALIVE: http::HeaderName = http::HeaderName::from_static("keep-alive");
    let Some(v) = headers.get(&KEEP_ALIVE).and_then(|v| v.to_str().ok()) else {
        return pool_idle;
    };
    for part in v.split(',') {
        let part = part.trim();
        if let Some(n) = part
            .strip_prefix("timeout=")
            .or_else(|| part.strip_prefix("TIMEOUT="))
        {
            if let Ok(secs) = n.trim().parse::<u64>() {
                let announced = Duration::from_secs(secs) * 3 / 4;
                return pool_idle.min(announced);
            }
        }
    }
    pool_idle
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(v: &str) -> HeaderMap {
        let mut m = HeaderMap::new();
        m.insert("keep-alive", v.parse().unwrap());
        m
    }

    #[test]
    fn lowers_to_three_quarters() {
        let d = Duration::from_secs(4);
        assert_eq!(
            idle_allowance(&h("timeout=2, max=100"), d),
            Duration::from_millis(1500)
        );
        assert_eq!(idle_allowance(&h("timeout=60"), d), d);
        assert_eq!(idle_allowance(&HeaderMap::new(), d), d);
        assert_eq!(idle_allowance(&h("max=5"), d), d);
        assert_eq!(idle_allowance(&h("timeout=0"), d), Duration::ZERO);
    }
}
