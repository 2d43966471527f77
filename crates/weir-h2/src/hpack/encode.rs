//! Header blocks encoded without the dynamic table (RFC 7541 §6.1, §6.2.2, §6.2.3), as
//! HAProxy encodes its responses: a field is the static table's index when name and value
//! are both there, else a literal (never indexed when sensitive) with the static index of its
//! name when the name is there. Strings go as they are, not Huffman-coded.
//!
//! No state, so nothing to look up or evict per field: a block is larger on the wire than
//! an indexing encoder's after the first response, and cheaper to make. The peer's decoder
//! never gets an entry, so its table size setting does not matter here.

/// Appends `:status`.
pub fn status(dst: &mut Vec<u8>, code: u16) {
    let indexed = match code {
        200 => 8,
        204 => 9,
        206 => 10,
        304 => 11,
        400 => 12,
        404 => 13,
        500 => 14,
        _ => 0,
    };
    if indexed != 0 {
        dst.push(0x80 | indexed);
        return;
    }
    let digits = [
        b'0' + (code / 100 % 10) as u8,
        b'0' + (code / 10 % 10) as u8,
        b'0' + (code % 10) as u8,
    ];
    // Literal without indexing, name :status (8).
    dst.push(0x08);
    string(dst, &digits);
}

/// Appends one field; `name` is lower case (as an `http::HeaderName` is). A sensitive field
/// is sent never-indexed, so that no later hop's encoder indexes it either.
pub fn field(dst: &mut Vec<u8>, name: &[u8], value: &[u8], sensitive: bool) {
    if !sensitive {
        if let Some(i) = static_pair(name, value) {
            dst.push(0x80 | i);
            return;
        }
    }
    let flag = if sensitive { 0x10 } else { 0x00 };
    match static_name(name) {
        Some(i) => integer(dst, flag, 4, usize::from(i)),
        None => {
            dst.push(flag);
            string(dst, name);
        }
    }
    string(dst, value);
}

/// The static index of a field whose name and value are both in the table.
fn static_pair(name: &[u8], value: &[u8]) -> Option<u8> {
    Some(match (name, value) {
        (b":method", b"GET") => 2,
        (b":method", b"POST") => 3,
        (b":path", b"/") => 4,
        (b":path", b"/index.html") => 5,
        (b":scheme", b"http") => 6,
        (b":scheme", b"https") => 7,
        (b"accept-encoding", b"gzip, deflate") => 16,
        _ => return None,
    })
}

/// The first static index with this name (RFC 7541 Appendix A).
pub fn static_name(name: &[u8]) -> Option<u8> {
    Some(match name {
        b":authority" => 1,
        b":method" => 2,
        b":path" => 4,
        b":scheme" => 6,
        b":status" => 8,
        b"accept-charset" => 15,
        b"accept-encoding" => 16,
        b"accept-language" => 17,
        b"accept-ranges" => 18,
        b"accept" => 19,
        b"access-control-allow-origin" => 20,
        b"age" => 21,
        b"allow" => 22,
        b"authorization" => 23,
        b"cache-control" => 24,
        b"content-disposition" => 25,
        b"content-encoding" => 26,
        b"content-language" => 27,
        b"content-length" => 28,
        b"content-location" => 29,
        b"content-range" => 30,
        b"content-type" => 31,
        b"cookie" => 32,
        b"date" => 33,
        b"etag" => 34,
        b"expect" => 35,
        b"expires" => 36,
        b"from" => 37,
        b"host" => 38,
        b"if-match" => 39,
        b"if-modified-since" => 40,
        b"if-none-match" => 41,
        b"if-range" => 42,
        b"if-unmodified-since" => 43,
        b"last-modified" => 44,
        b"link" => 45,
        b"location" => 46,
        b"max-forwards" => 47,
        b"proxy-authenticate" => 48,
        b"proxy-authorization" => 49,
        b"range" => 50,
        b"referer" => 51,
        b"refresh" => 52,
        b"retry-after" => 53,
        b"server" => 54,
        b"set-cookie" => 55,
        b"strict-transport-security" => 56,
        b"transfer-encoding" => 57,
        b"user-agent" => 58,
        b"vary" => 59,
        b"via" => 60,
        b"www-authenticate" => 61,
        _ => return None,
    })
}

/// An integer with a `bits`-bit prefix after the representation's `flags` (§5.1).
fn integer(dst: &mut Vec<u8>, flags: u8, bits: u32, v: usize) {
    let max = (1usize << bits) - 1;
    if v < max {
        dst.push(flags | v as u8);
        return;
    }
    dst.push(flags | max as u8);
    let mut rest = v - max;
    while rest >= 0x80 {
        dst.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    dst.push(rest as u8);
}

/// A string literal as it is (H = 0). A length under 127 is its own prefix byte, written
/// here rather than through `integer` (two calls per literal field, ~15 instructions each).
fn string(dst: &mut Vec<u8>, s: &[u8]) {
    match u8::try_from(s.len()) {
        Ok(n) if n < 0x7f => dst.push(n),
        _ => integer(dst, 0, 7, s.len()),
    }
    dst.extend_from_slice(s);
}

#[cfg(test)]
mod tests {
    use super::super::table::STATIC;
    use super::super::Decoder;
    use super::*;

    #[test]
    fn static_names_match_the_table() {
        for (i, (name, _)) in STATIC.iter().enumerate() {
            let first = STATIC.iter().position(|(n, _)| n == name).unwrap() + 1;
            assert_eq!(static_name(name.as_bytes()), Some(first as u8), "{name}");
            assert!(i + 1 >= first);
        }
        for (n, v) in [
            (":method", "GET"),
            (":method", "POST"),
            (":path", "/"),
            (":path", "/index.html"),
            (":scheme", "http"),
            (":scheme", "https"),
            ("accept-encoding", "gzip, deflate"),
        ] {
            let i = static_pair(n.as_bytes(), v.as_bytes()).unwrap();
            assert_eq!(STATIC[i as usize - 1], (n, v));
        }
    }

    /// What is encoded decodes to the same fields, and leaves the decoder's table empty.
    #[test]
    fn round_trips_through_the_decoder() {
        let long = "v".repeat(300);
        let (long_name, huge) = (format!("x-{}", "n".repeat(200)), "h".repeat(70_000));
        let fields: Vec<(&str, &str, bool)> = vec![
            (&long_name, &huge, false),
            ("x-secret", "s", true),
            (&long_name, "", true),
            (":method", "GET", false),
            (":path", "/a/b?c=d", false),
            ("content-type", "text/plain", false),
            ("x-custom-field-with-a-long-name", &long, false),
            ("authorization", "Basic dTpw", true),
            ("accept-encoding", "gzip, deflate", false),
            ("www-authenticate", "", false),
        ];
        let mut block = Vec::new();
        status(&mut block, 200);
        status(&mut block, 503);
        for (n, v, s) in &fields {
            field(&mut block, n.as_bytes(), v.as_bytes(), *s);
        }
        let mut d = Decoder::new(4096);
        let mut out = Vec::new();
        d.decode(&block, |n, v, s| {
            out.push((
                String::from_utf8(n.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
                s,
            ))
        })
        .unwrap();
        let mut expect = vec![
            (":status".to_string(), "200".to_string(), false),
            (":status".to_string(), "503".to_string(), false),
        ];
        expect.extend(
            fields
                .iter()
                .map(|(n, v, s)| (n.to_string(), v.to_string(), *s)),
        );
        assert_eq!(out, expect);
        assert_eq!(d.table_max(), 4096);
    }

    #[test]
    fn integers_use_their_prefix() {
        let mut b = Vec::new();
        integer(&mut b, 0, 5, 10);
        assert_eq!(b, [0x0a]);
        // RFC 7541 C.1.2: 1337 with a 5-bit prefix.
        b.clear();
        integer(&mut b, 0, 5, 1337);
        assert_eq!(b, [0x1f, 0x9a, 0x0a]);
        b.clear();
        integer(&mut b, 0x10, 4, 15);
        assert_eq!(b, [0x1f, 0x00]);
        // A string's length, either side of the one-byte form's end.
        for (n, prefix) in [(126, vec![0x7e]), (127, vec![0x7f, 0x00])] {
            b.clear();
            string(&mut b, &vec![b'x'; n]);
            assert_eq!(b[..prefix.len()], prefix[..], "{n}");
            assert_eq!(b.len(), prefix.len() + n);
        }
    }
}
