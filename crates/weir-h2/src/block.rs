//! A field block being gathered from a HEADERS frame and the CONTINUATION frames that finish
//! it (RFC 9113 §4.3), on either side of a connection.

use crate::frame::StreamId;

/// A field block being gathered from HEADERS and CONTINUATION frames; `K` is what the side
/// means to do with it.
pub(crate) struct Block<K> {
    pub stream: StreamId,
    pub bytes: Vec<u8>,
    pub end_stream: bool,
    pub kind: K,
}

impl<K> Block<K> {
    /// Adds a CONTINUATION's fragment; false when the block is now far past the header list
    /// size, which no peer needs (a CONTINUATION flood, CVE-2024-27316).
    pub fn extend(&mut self, fragment: &[u8], max_header_list: u32) -> bool {
        self.bytes.extend_from_slice(fragment);
        self.bytes.len() <= 2 * max_header_list as usize + 16_384
    }
}
