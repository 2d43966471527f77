//! Consistent hashing with bounded loads (Mirrokni et al., 2016, as in
//! HAProxy's `hash-balance-factor`): keys map to a ring of virtual nodes whose
//! positions depend only on each endpoint's identity, so removing one of N
//! endpoints moves only its ~1/N of the keys; and a key whose endpoint is
//! already above `factor` × its fair share of in-flight requests walks on to
//! the next endpoint, so one hot key cannot overload a backend.

use xxhash_rust::xxh3::xxh3_64;

use super::view::PoolView;

/// Virtual nodes per endpoint at average weight.
const VNODES: u64 = 160;

#[derive(Debug)]
pub struct HashRing {
    /// (position, endpoint index), sorted by position.
    points: Vec<(u64, u32)>,
}

/// The stable hash of a key (same on every weir replica and version).
pub fn hash_bytes(b: &[u8]) -> u64 {
    xxh3_64(b)
}

/// The hash of a client's address (`hash_key = "client_ip"`, and a tcp pool's key).
pub fn ip_hash(ip: std::net::IpAddr) -> u64 {
    match ip {
        std::net::IpAddr::V4(v4) => hash_bytes(&v4.octets()),
        std::net::IpAddr::V6(v6) => hash_bytes(&v6.octets()),
    }
}

impl HashRing {
    /// `ids[i]` is endpoint i's stable identity, `weights[i]` its weight.
    pub fn new(ids: &[u64], weights: &[u32]) -> Self {
        let n = ids.len().max(1) as u64;
        let total: u64 = weights.iter().map(|&w| w as u64).sum::<u64>().max(1);
        let mut points = Vec::new();
        for (i, (&id, &w)) in ids.iter().zip(weights).enumerate() {
            let vnodes = (VNODES * n * w as u64).div_ceil(total).max(1);
            for v in 0..vnodes {
                let mut buf = [0u8; 16];
                buf[..8].copy_from_slice(&id.to_le_bytes());
                buf[8..].copy_from_slice(&v.to_le_bytes());
                points.push((xxh3_64(&buf), i as u32));
            }
        }
        points.sort_unstable();
        HashRing { points }
    }

    /// Endpoints in ring order from `h`, each once.
    fn walk(&self, h: u64) -> impl Iterator<Item = usize> + '_ {
        let start = self.points.partition_point(|&(p, _)| p < h);
        let len = self.points.len();
        let mut seen = 0u64;
        let mut seen_big = Vec::new();
        (0..len).filter_map(move |k| {
            let i = self.points[(start + k) % len].1 as usize;
            let fresh = if i < 64 {
                let new = seen & (1 << i) == 0;
                seen |= 1 << i;
                new
            } else if seen_big.contains(&i) {
                false
            } else {
                seen_big.push(i);
                true
            };
            fresh.then_some(i)
        })
    }
}

pub fn pick<P: PoolView + ?Sized>(
    pool: &P,
    ring: &HashRing,
    factor: f64,
    h: u64,
    ok: &dyn Fn(usize) -> bool,
) -> Option<usize> {
    if factor > 0.0 {
        let total: f64 = (0..pool.len())
            .map(|i| pool.in_flight(i) as f64)
            .sum::<f64>()
            + 1.0;
        let weights: f64 = (0..pool.len()).map(|i| pool.eff_weight(i)).sum();
        let under_bound = |i: usize| {
            let share = total * pool.eff_weight(i) / weights;
            (pool.in_flight(i) as f64 + 1.0) <= (factor * share).ceil()
        };
        if let Some(i) = ring.walk(h).find(|&i| ok(i) && under_bound(i)) {
            return Some(i);
        }
    }
    ring.walk(h).find(|&i| ok(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(ring: &HashRing, ids: &[u64], key: u64) -> u64 {
        ids[ring.walk(key).next().unwrap()]
    }

    #[test]
    fn removing_one_of_n_moves_about_one_nth() {
        let ids: Vec<u64> = (1..=5).map(|i| hash_bytes(&[i])).collect();
        let full = HashRing::new(&ids, &[1; 5]);
        let fewer_ids: Vec<u64> = ids[..4].to_vec();
        let fewer = HashRing::new(&fewer_ids, &[1; 4]);
        let keys: Vec<u64> = (0..10_000u32)
            .map(|k| hash_bytes(&k.to_le_bytes()))
            .collect();
        let moved = keys
            .iter()
            .filter(|&&k| owner(&full, &ids, k) != owner(&fewer, &fewer_ids, k))
            .count();
        let removed_share = keys
            .iter()
            .filter(|&&k| owner(&full, &ids, k) == ids[4])
            .count();
        // Only the removed endpoint's keys move.
        assert_eq!(moved, removed_share);
        assert!(moved < 10_000 * 30 / 100, "{moved}");
    }

    #[test]
    fn weights_shape_the_share() {
        let ids = [hash_bytes(b"a"), hash_bytes(b"b")];
        let ring = HashRing::new(&ids, &[3, 1]);
        let a = (0..10_000u32)
            .filter(|k| owner(&ring, &ids, hash_bytes(&k.to_le_bytes())) == ids[0])
            .count();
        assert!((6_500..8_500).contains(&a), "{a}");
    }
}
