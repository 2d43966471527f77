//! Header blocks decoded (RFC 7541 §6): each field handed to the caller as it is read, from
//! the tables, the block itself or (for a Huffman string) a scratch buffer reused across
//! blocks, so that a field costs no allocation unless the peer asks to index it.

use bytes::Bytes;

use super::huffman::{self, HuffmanError};
use super::table::{entry_size, Dynamic, Parsed, STATIC};

/// Why a header block did not decode: every one is a connection error of type
/// COMPRESSION_ERROR (RFC 9113 §4.3), since the two ends' tables may now differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("the block ends inside a field")]
    Truncated,
    #[error("an integer is too large")]
    Integer,
    #[error("index {0} is in neither table")]
    Index(usize),
    #[error("a table size update to {0} bytes, above the {1} allowed")]
    TableSize(usize, usize),
    #[error("a table size update after the block's first field")]
    LateSizeUpdate,
    #[error(transparent)]
    Huffman(#[from] HuffmanError),
}

/// One connection's decoder: its dynamic table lives from block to block.
#[derive(Debug)]
pub struct Decoder {
    table: Dynamic,
    /// The largest table the peer may ask for (our SETTINGS_HEADER_TABLE_SIZE).
    limit: usize,
    name: Vec<u8>,
    value: Vec<u8>,
}

/// Where a decoded string is.
enum Str<'b> {
    Static(&'static str),
    Table(Bytes),
    Block(&'b [u8]),
    /// In the decoder's scratch buffer for names or for values.
    Scratch,
}

impl Decoder {
    /// A decoder whose table may hold `limit` bytes (4096 unless SETTINGS said otherwise).
    pub fn new(limit: usize) -> Decoder {
        Decoder {
            table: Dynamic::new(limit),
            limit,
            name: Vec::new(),
            value: Vec::new(),
        }
    }

    /// Decodes one whole header block (HEADERS and its CONTINUATIONs), calling `each` with
    /// every field's name, value and whether it is sensitive (never to be indexed by a
    /// later hop), in order.
    pub fn decode(
        &mut self,
        block: &[u8],
        mut each: impl FnMut(&[u8], &[u8], bool),
    ) -> Result<(), DecodeError> {
        self.decode_cached(block, |n, v, sensitive, _| each(n, v, sensitive))
    }

    /// As [`decode`](Self::decode), and for a field that is a dynamic table entry, that
    /// entry's [`Parsed`] slot: the caller may keep the field it made from it there, and
    /// finds it there the next time the peer refers to the entry.
    pub fn decode_cached(
        &mut self,
        block: &[u8],
        mut each: impl FnMut(&[u8], &[u8], bool, Option<&mut Option<Parsed>>),
    ) -> Result<(), DecodeError> {
        let mut buf = block;
        let mut first = true;
        while let Some(&b) = buf.first() {
            if b & 0x80 != 0 {
                // Indexed field (§6.1).
                let i = integer(&mut buf, 7)?;
                match i {
                    1..=61 => {
                        let (n, v) = STATIC[i - 1];
                        each(n.as_bytes(), v.as_bytes(), false, None);
                    }
                    _ => {
                        let e = i
                            .checked_sub(62)
                            .and_then(|d| self.table.get_mut(d))
                            .ok_or(DecodeError::Index(i))?;
                        each(&e.name, &e.value, false, Some(&mut e.parsed));
                    }
                }
            } else if b & 0x40 != 0 {
                // Literal with incremental indexing (§6.2.1): the table keeps a copy.
                let i = integer(&mut buf, 6)?;
                let name = self.name(i, &mut buf)?;
                let value = string(&mut buf, &mut self.value)?;
                let name = Bytes::copy_from_slice(self.resolve(&name, true));
                let value = Bytes::copy_from_slice(self.resolve(&value, false));
                if entry_size(&name, &value) > self.table.max() {
                    // Larger than the table: it empties it and is not kept (§4.4).
                    each(&name, &value, false, None);
                    self.table.insert(name, value);
                } else if let Some(e) = self.table.insert(name, value) {
                    // Handed over from its new entry, so that what the caller makes of it is
                    // kept from the first time.
                    each(&e.name, &e.value, false, Some(&mut e.parsed));
                }
            } else if b & 0x20 != 0 {
                // Dynamic table size update (§6.3): only before the block's first field.
                if !first {
                    return Err(DecodeError::LateSizeUpdate);
                }
                let size = integer(&mut buf, 5)?;
                if size > self.limit {
                    return Err(DecodeError::TableSize(size, self.limit));
                }
                self.table.resize(size);
                continue;
            } else {
                // Literal without indexing (§6.2.2) or never indexed (§6.2.3).
                let sensitive = b & 0x10 != 0;
                let i = integer(&mut buf, 4)?;
                let name = self.name(i, &mut buf)?;
                let value = string(&mut buf, &mut self.value)?;
                each(
                    self.resolve(&name, true),
                    self.resolve(&value, false),
                    sensitive,
                    None,
                );
            }
            first = false;
        }
        Ok(())
    }

    /// A literal's name: from a table when `i` is not 0, else from the block.
    fn name<'b>(&mut self, i: usize, buf: &mut &'b [u8]) -> Result<Str<'b>, DecodeError> {
        Ok(match i {
            0 => string(buf, &mut self.name)?,
            1..=61 => Str::Static(STATIC[i - 1].0),
            _ => Str::Table(self.dynamic(i)?.clone()),
        })
    }

    /// The name of dynamic table entry `i`.
    fn dynamic(&self, i: usize) -> Result<&Bytes, DecodeError> {
        let e = i
            .checked_sub(62)
            .and_then(|d| self.table.get(d))
            .ok_or(DecodeError::Index(i))?;
        Ok(&e.name)
    }

    fn resolve<'s>(&'s self, s: &'s Str<'_>, name: bool) -> &'s [u8] {
        match s {
            Str::Static(t) => t.as_bytes(),
            Str::Table(b) => b,
            Str::Block(b) => b,
            Str::Scratch if name => &self.name,
            Str::Scratch => &self.value,
        }
    }

    /// The table's current size limit (what the last size update set).
    pub fn table_max(&self) -> usize {
        self.table.max()
    }
}

/// An integer with an `bits`-bit prefix (§5.1). Values past 2^28 are refused: nothing in
/// a header block needs them, and they would only let a peer make weir loop.
fn integer(buf: &mut &[u8], bits: u32) -> Result<usize, DecodeError> {
    let mask = (1usize << bits) - 1;
    let (&first, rest) = buf.split_first().ok_or(DecodeError::Truncated)?;
    *buf = rest;
    let mut v = usize::from(first) & mask;
    if v < mask {
        return Ok(v);
    }
    let mut shift = 0;
    loop {
        let (&b, rest) = buf.split_first().ok_or(DecodeError::Truncated)?;
        *buf = rest;
        if shift > 21 {
            return Err(DecodeError::Integer);
        }
        v += usize::from(b & 0x7f) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
}

/// A string literal (§5.2): borrowed from the block, or Huffman-decoded into `scratch`.
fn string<'b>(buf: &mut &'b [u8], scratch: &mut Vec<u8>) -> Result<Str<'b>, DecodeError> {
    let huffman = buf.first().ok_or(DecodeError::Truncated)? & 0x80 != 0;
    let len = integer(buf, 7)?;
    if len > buf.len() {
        return Err(DecodeError::Truncated);
    }
    let (s, rest) = buf.split_at(len);
    *buf = rest;
    if !huffman {
        return Ok(Str::Block(s));
    }
    scratch.clear();
    huffman::decode(s, scratch)?;
    Ok(Str::Scratch)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn fields(d: &mut Decoder, block: &[u8]) -> Result<Vec<(String, String)>, DecodeError> {
        let mut out = Vec::new();
        d.decode(block, |n, v, _| {
            out.push((
                String::from_utf8(n.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            ))
        })?;
        Ok(out)
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    /// RFC 7541 C.3 (requests without Huffman) and C.4 (the same with Huffman), each on one
    /// decoder across its three requests.
    #[test]
    fn rfc_request_examples() {
        let first = pairs(&[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            (":authority", "www.example.com"),
        ]);
        let mut second = first.clone();
        second.push(("cache-control".into(), "no-cache".into()));
        let third = pairs(&[
            (":method", "GET"),
            (":scheme", "https"),
            (":path", "/index.html"),
            (":authority", "www.example.com"),
            ("custom-key", "custom-value"),
        ]);
        let plain = [
            "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
            "8286 84be 5808 6e6f 2d63 6163 6865",
            "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
        ];
        let huffman = [
            "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
            "8286 84be 5886 a8eb 1064 9cbf",
            "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
        ];
        for blocks in [plain, huffman] {
            let mut d = Decoder::new(4096);
            assert_eq!(fields(&mut d, &hex(blocks[0])).unwrap(), first);
            assert_eq!(fields(&mut d, &hex(blocks[1])).unwrap(), second);
            assert_eq!(fields(&mut d, &hex(blocks[2])).unwrap(), third);
            assert_eq!(d.table.len(), 3);
            assert_eq!(d.table.size(), 164);
        }
    }

    /// RFC 7541 C.6.1 and C.6.2: responses with Huffman in a 256-byte table, where the
    /// second evicts the first's oldest entry.
    #[test]
    fn rfc_response_examples_with_eviction() {
        let mut d = Decoder::new(256);
        let one = hex(
            "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0
             82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
        );
        let date = "Mon, 21 Oct 2013 20:13:21 GMT";
        let mut expect = pairs(&[
            (":status", "302"),
            ("cache-control", "private"),
            ("date", date),
            ("location", "https://www.example.com"),
        ]);
        assert_eq!(fields(&mut d, &one).unwrap(), expect);
        assert_eq!(d.table.size(), 222);
        let two = hex("4883 640e ffc1 c0bf");
        expect[0].1 = "307".into();
        assert_eq!(fields(&mut d, &two).unwrap(), expect);
        assert_eq!(d.table.size(), 222);
        assert_eq!(d.table.len(), 4);
    }

    #[test]
    fn bad_blocks_are_refused() {
        let mut d = Decoder::new(4096);
        // Index 0, and an index past both tables.
        assert_eq!(fields(&mut d, &[0x80]), Err(DecodeError::Index(0)));
        assert_eq!(fields(&mut d, &[0xbe]), Err(DecodeError::Index(62)));
        // A string longer than the block.
        assert_eq!(
            fields(&mut d, &[0x40, 0x05, b'a']),
            Err(DecodeError::Truncated)
        );
        // An integer that does not end.
        assert_eq!(
            fields(&mut d, &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
            Err(DecodeError::Integer)
        );
        // A size update above the limit, and one after a field.
        assert_eq!(
            fields(&mut d, &hex("3fe2 1f")),
            Err(DecodeError::TableSize(4097, 4096))
        );
        assert!(fields(&mut d, &hex("3fe1 0f")).is_ok());
        assert_eq!(
            fields(&mut d, &hex("82 20")),
            Err(DecodeError::LateSizeUpdate)
        );
        // EOS inside a Huffman string.
        assert!(matches!(
            fields(&mut d, &hex("0084 ffff ffff 00")),
            Err(DecodeError::Huffman(_))
        ));
    }

    #[test]
    fn sensitive_fields_say_so() {
        let mut d = Decoder::new(4096);
        // Never indexed, new name: "password: secret".
        let block = hex("1008 7061 7373 776f 7264 0673 6563 7265 74");
        let mut seen = Vec::new();
        d.decode(&block, |n, v, s| seen.push((n.to_vec(), v.to_vec(), s)))
            .unwrap();
        assert_eq!(seen, vec![(b"password".to_vec(), b"secret".to_vec(), true)]);
        assert_eq!(d.table.len(), 0);
    }
}
