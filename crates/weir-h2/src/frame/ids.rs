//! Maps keyed by stream id, with a multiplicative hash instead of SipHash: a stream costs
//! several lookups on each side of weir, and SipHash was a measurable part of that. A client
//! picks the ids, but they must rise and at most a connection's stream limit are open, so
//! ids aimed at one bucket can only slow lookups over that many entries.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::constants::StreamId;

/// A `HashMap` from stream ids.
pub type StreamMap<V> = HashMap<StreamId, V, BuildHasherDefault<IdHasher>>;

/// Fibonacci hashing of a `u32`: the high bits, which the map uses, mix all of the id's.
#[derive(Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Only `u32` keys are hashed here; fold anything else in anyway.
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_spread_and_maps_work() {
        let mut m: StreamMap<u32> = StreamMap::default();
        for id in (1..20_001).step_by(2) {
            m.insert(id, id * 2);
        }
        assert_eq!(m.len(), 10_000);
        assert_eq!(m.get(&9_999), Some(&19_998));
        assert_eq!(m.remove(&1), Some(2));
        // Consecutive odd ids differ in their top bits, which hashbrown's groups use.
        let top = |id: u32| {
            let mut h = IdHasher::default();
            h.write_u32(id);
            h.finish() >> 57
        };
        let distinct: std::collections::HashSet<u64> = (1..256).step_by(2).map(top).collect();
        assert!(distinct.len() > 64, "{}", distinct.len());
    }
}
