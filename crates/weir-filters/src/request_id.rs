//! A request id weir makes for a request without one (a headers filter's `request_id`).

use http::HeaderValue;

/// 128 random bits as 32 hex digits, as nginx's `$request_id`.
pub fn new_request_id() -> HeaderValue {
    // Both digits of a byte from one table: 16 steps, not 32 shifts and masks (this is made
    // for every request through a chain that sets ids).
    const PAIRS: [[u8; 2]; 256] = {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut t = [[0u8; 2]; 256];
        let mut i = 0;
        while i < 256 {
            t[i] = [HEX[i >> 4], HEX[i & 0xf]];
            i += 1;
        }
        t
    };
    let mut out = [0u8; 32];
    for (pair, b) in out
        .chunks_exact_mut(2)
        .zip(fastrand::u128(..).to_le_bytes())
    {
        pair.copy_from_slice(&PAIRS[b as usize]);
    }
    // Owned as it is, with its count in the same allocation: `from_bytes` would copy it into
    // a `Vec`, and the first clone (the request's field, then the answer's) allocate again.
    HeaderValue::from_maybe_shared(bytes::Bytes::from_owner(out))
        .expect("hex digits are a header value")
}
