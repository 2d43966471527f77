//! The HPACK Huffman code (RFC 7541 §5.2, Appendix B): decoding only, since weir sends its
//! strings as they are (a response's fields cost no CPU to encode that way).
//!
//! The code is canonical: codes of one length are consecutive numbers. A code of at most
//! [`FAST_BITS`] bits (the common characters of paths, names and values) is found by one
//! lookup on the next [`FAST_BITS`] bits; a longer one by comparing the next bits with the
//! first code of each length.

use std::sync::OnceLock;

use super::huffman_codes::CODES;

/// The bits looked up at once.
const FAST_BITS: u32 = 9;
/// The longest code.
const MAX_LEN: usize = 30;
const EOS: u16 = 256;

/// Why a Huffman string did not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HuffmanError {
    #[error("Huffman string ends inside a code")]
    Truncated,
    #[error("Huffman padding is not the EOS code's first bits, or longer than 7 bits")]
    Padding,
    #[error("Huffman string holds the EOS symbol")]
    Eos,
}

struct Tables {
    /// By the next FAST_BITS bits: (symbol, code length), length 0 for a longer code.
    fast: Vec<(u16, u8)>,
    /// Per code length: the first code, how many there are, and where their symbols start in
    /// `sorted`.
    first: [u32; MAX_LEN + 1],
    count: [u32; MAX_LEN + 1],
    offset: [u32; MAX_LEN + 1],
    /// The symbols by (code length, code).
    sorted: Vec<u16>,
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let mut sorted: Vec<u16> = (0..=EOS).collect();
        sorted.sort_by_key(|&s| (CODES[s as usize].1, CODES[s as usize].0));
        let mut t = Tables {
            fast: vec![(0, 0); 1 << FAST_BITS],
            first: [0; MAX_LEN + 1],
            count: [0; MAX_LEN + 1],
            offset: [0; MAX_LEN + 1],
            sorted,
        };
        for (i, &s) in t.sorted.iter().enumerate() {
            let (code, len) = CODES[s as usize];
            let len = len as usize;
            if t.count[len] == 0 {
                t.first[len] = code;
                t.offset[len] = i as u32;
            }
            t.count[len] += 1;
            if len as u32 <= FAST_BITS {
                // Every FAST_BITS-bit pattern this code begins.
                let spare = FAST_BITS - len as u32;
                let base = (code << spare) as usize;
                for e in &mut t.fast[base..base + (1 << spare)] {
                    *e = (s, len as u8);
                }
            }
        }
        t
    })
}

/// Appends the decoded bytes of `src` to `dst`.
pub fn decode(src: &[u8], dst: &mut Vec<u8>) -> Result<(), HuffmanError> {
    let t = tables();
    dst.reserve(src.len() * 8 / 5);
    // The next bits, first bit highest.
    let mut acc: u64 = 0;
    let mut nbits: u32 = 0;
    let mut next = src.iter();
    loop {
        while nbits <= 56 {
            let Some(&b) = next.next() else { break };
            acc |= u64::from(b) << (56 - nbits);
            nbits += 8;
        }
        if nbits == 0 {
            return Ok(());
        }
        // At the end, up to 7 one bits are padding (no code that short is all ones).
        if nbits <= 7 && next.as_slice().is_empty() && acc >> (64 - nbits) == (1 << nbits) - 1 {
            return Ok(());
        }
        let (sym, len) = match t.fast[(acc >> (64 - FAST_BITS)) as usize] {
            (s, l) if l != 0 => (s, u32::from(l)),
            _ => long_code(t, acc).ok_or(HuffmanError::Truncated)?,
        };
        if len > nbits {
            // The bits ran out inside a code: a truncated string, or padding longer than 7
            // bits (which reads as the start of a long code).
            return Err(match acc >> (64 - nbits) == (1 << nbits) - 1 {
                true => HuffmanError::Padding,
                false => HuffmanError::Truncated,
            });
        }
        if sym == EOS {
            return Err(HuffmanError::Eos);
        }
        dst.push(sym as u8);
        acc <<= len;
        nbits -= len;
    }
}

/// The symbol of a code longer than FAST_BITS at the top of `acc`.
fn long_code(t: &Tables, acc: u64) -> Option<(u16, u32)> {
    for len in FAST_BITS as usize + 1..=MAX_LEN {
        let code = (acc >> (64 - len)) as u32;
        let n = code.wrapping_sub(t.first[len]);
        if t.count[len] != 0 && code >= t.first[len] && n < t.count[len] {
            return Some((t.sorted[(t.offset[len] + n) as usize], len as u32));
        }
    }
    None
}

#[cfg(test)]
pub(crate) fn encode(src: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let (mut acc, mut nbits) = (0u64, 0u32);
    for &b in src {
        let (code, len) = CODES[b as usize];
        acc = (acc << len) | u64::from(code);
        nbits += u32::from(len);
        while nbits >= 8 {
            out.push((acc >> (nbits - 8)) as u8);
            nbits -= 8;
        }
    }
    if nbits > 0 {
        let pad = 8 - nbits;
        out.push(((acc << pad) | ((1 << pad) - 1)) as u8);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn decoded(src: &[u8]) -> Result<Vec<u8>, HuffmanError> {
        let mut out = Vec::new();
        decode(src, &mut out).map(|_| out)
    }

    /// A complete canonical prefix code: each code follows the one before it by (length,
    /// code), the last is all ones, and no code of 7 bits or fewer is all ones (so that the
    /// padding rule is unambiguous).
    #[test]
    fn the_table_is_a_complete_canonical_code() {
        let t = tables();
        let mut prev: Option<(u32, u8)> = None;
        for &s in &t.sorted {
            let (code, len) = CODES[s as usize];
            assert!(code < (1 << len), "symbol {s}: code wider than its length");
            if let Some((pc, pl)) = prev {
                assert_eq!(code, (pc + 1) << (len - pl), "symbol {s}: not canonical");
            }
            if len <= 7 {
                assert_ne!(code, (1 << len) - 1, "symbol {s}: a short all-ones code");
            }
            prev = Some((code, len));
        }
        let (last, len) = prev.unwrap();
        assert_eq!(last, (1u32 << len) - 1, "the last code is not all ones");
        assert_eq!(CODES[EOS as usize], (0x3fff_ffff, 30));
    }

    /// RFC 7541 Appendix C.4 and C.6.
    #[test]
    fn rfc_examples() {
        let cases = [
            ("f1e3 c2e5 f23a 6ba0 ab90 f4ff", "www.example.com"),
            ("a8eb 1064 9cbf", "no-cache"),
            ("25a8 49e9 5ba9 7d7f", "custom-key"),
            ("25a8 49e9 5bb8 e8b4 bf", "custom-value"),
            ("6402", "302"),
            ("aec3 771a 4b", "private"),
            (
                "d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff",
                "Mon, 21 Oct 2013 20:13:21 GMT",
            ),
            (
                "9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3",
                "https://www.example.com",
            ),
        ];
        for (code, text) in cases {
            assert_eq!(decoded(&hex(code)).unwrap(), text.as_bytes(), "{text}");
            assert_eq!(encode(text.as_bytes()), hex(code), "{text}");
        }
    }

    #[test]
    fn every_byte_round_trips() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decoded(&encode(&all)).unwrap(), all);
        // Every length of a run of long codes, so every padding length shows up.
        for n in 0..20 {
            let s: Vec<u8> = (0..n).map(|i| (i * 37 + 1) as u8).collect();
            assert_eq!(decoded(&encode(&s)).unwrap(), s);
        }
        assert_eq!(decoded(&[]).unwrap(), b"");
    }

    #[test]
    fn bad_strings_are_refused() {
        // Eight bits of padding (a whole byte of ones).
        let mut s = encode(b"a");
        s.push(0xff);
        assert_eq!(decoded(&s), Err(HuffmanError::Padding));
        // Padding that is not ones: 'a' is 00011, then 000 instead of 111.
        assert_eq!(decoded(&[0b0001_1000]), Err(HuffmanError::Truncated));
        // EOS in the string: 30 ones, then padding.
        assert_eq!(decoded(&[0xff, 0xff, 0xff, 0xff]), Err(HuffmanError::Eos));
        // A 10-bit code ('!', 1111111000) cut off after its first byte.
        assert_eq!(CODES[b'!' as usize], (0x3f8, 10));
        let s = encode(b"!");
        assert_eq!(decoded(&s[..1]), Err(HuffmanError::Truncated));
    }
}
