//! What a request brings to endpoint selection ([`PickKey`]): its hash, its sticky
//! endpoint, and the endpoints it must avoid. Below the algorithms and the pool's health
//! filter, which both read it.

/// What a request brings to endpoint selection.
#[derive(Debug, Clone, Copy, Default)]
pub struct PickKey {
    /// The hash of the configured key (`balance = "hash"`); `None` when the
    /// request lacks it, and then the pool round-robins.
    pub hash: Option<u64>,
    /// The endpoint id from a valid sticky cookie.
    pub sticky: Option<u64>,
    /// Endpoint indices (below 64) not to pick, e.g. ones that just refused a connection.
    pub avoid: u64,
}

impl PickKey {
    #[inline]
    pub fn avoids(&self, i: usize) -> bool {
        i < 64 && self.avoid & (1 << i) != 0
    }

    pub fn avoid(&mut self, i: usize) {
        if i < 64 {
            self.avoid |= 1 << i;
        }
    }
}
