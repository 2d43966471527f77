//! Stateless sticky sessions: the cookie names the endpoint by an opaque id
//! (never its address) and carries an HMAC, so a client cannot steer itself
//! onto an endpoint of its choosing by forging one.

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Bytes of the MAC kept in the cookie: 64 bits is plenty against online guessing.
const MAC_LEN: usize = 8;

#[derive(Debug, Clone)]
pub struct StickyCodec {
    key: Vec<u8>,
}

impl StickyCodec {
    /// `secret` from the config, or a random key for this process.
    pub fn new(secret: Option<&str>) -> Self {
        let key = match secret {
            Some(s) => s.as_bytes().to_vec(),
            None => (0..32).map(|_| fastrand::u8(..)).collect(),
        };
        StickyCodec { key }
    }

    fn mac(&self, id: u64) -> [u8; MAC_LEN] {
        let mut m = HmacSha256::new_from_slice(&self.key).expect("HMAC takes any key length");
        m.update(&id.to_be_bytes());
        let full = m.finalize().into_bytes();
        let mut out = [0u8; MAC_LEN];
        out.copy_from_slice(&full[..MAC_LEN]);
        out
    }

    /// The cookie value for endpoint `id`: 32 hex digits.
    pub fn encode(&self, id: u64) -> String {
        let mut s = format!("{id:016x}");
        for b in self.mac(id) {
            s.push_str(&format!("{b:02x}"));
        }
        s
    }

    /// The endpoint id, if the value is well-formed and its MAC is ours.
    pub fn decode(&self, value: &str) -> Option<u64> {
        if value.len() != 32 || !value.is_ascii() {
            return None;
        }
        let id = u64::from_str_radix(&value[..16], 16).ok()?;
        let mut given = [0u8; MAC_LEN];
        for (k, b) in given.iter_mut().enumerate() {
            *b = u8::from_str_radix(&value[16 + 2 * k..18 + 2 * k], 16).ok()?;
        }
        let mut m = HmacSha256::new_from_slice(&self.key).ok()?;
        m.update(&id.to_be_bytes());
        m.verify_truncated_left(&given).ok()?;
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_forgery() {
        let c = StickyCodec::new(Some("0123456789abcdef0123"));
        let v = c.encode(42);
        assert_eq!(c.decode(&v), Some(42));
        // Same MAC, other id: rejected.
        let forged = format!("{:016x}{}", 43u64, &v[16..]);
        assert_eq!(c.decode(&forged), None);
        assert_eq!(c.decode("garbage"), None);
        // Another key does not accept ours.
        assert_eq!(
            StickyCodec::new(Some("another-secret-key!!")).decode(&v),
            None
        );
    }
}
