//! Where the header fields sit in a head, noted while httparse borrows the
//! read buffer, so that once the head is split off and frozen each field is
//! sliced out of it without a copy. Not zeroed first: the array is large
//! (1.6 KB) and only its first `len` entries are ever read.

use std::mem::MaybeUninit;
use std::ops::Range;

/// The most fields either side accepts in a head.
pub const MAX_FIELDS: usize = 100;

pub struct Spans {
    /// Name start and end, value start and end.
    at: [MaybeUninit<[u32; 4]>; MAX_FIELDS],
    len: usize,
}

impl Default for Spans {
    fn default() -> Self {
        Spans::new()
    }
}

impl Spans {
    pub fn new() -> Self {
        Spans {
            at: [const { MaybeUninit::uninit() }; MAX_FIELDS],
            len: 0,
        }
    }

    /// Notes the fields httparse found in `buf`.
    pub fn record(&mut self, buf: &[u8], fields: &[httparse::Header<'_>]) {
        let base = buf.as_ptr() as usize;
        for (slot, h) in self.at.iter_mut().zip(fields) {
            let n = offset(base, h.name.as_bytes());
            let v = offset(base, h.value);
            slot.write([n, n + h.name.len() as u32, v, v + h.value.len() as u32]);
        }
        self.len = fields.len().min(MAX_FIELDS);
    }

    /// Each field's name and value positions.
    pub fn iter(&self) -> impl Iterator<Item = (Range<usize>, Range<usize>)> + '_ {
        self.at[..self.len].iter().map(|s| {
            // SAFETY: `record` wrote the first `len` entries.
            let [a, b, c, d] = unsafe { s.assume_init() };
            (a as usize..b as usize, c as usize..d as usize)
        })
    }
}

/// Where `s` starts in the buffer at `base`. Empty slices may not point
/// into the buffer, and need not.
pub fn offset(base: usize, s: &[u8]) -> u32 {
    match s.is_empty() {
        true => 0,
        false => (s.as_ptr() as usize - base) as u32,
    }
}
