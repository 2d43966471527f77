//! Small pieces of HTTP/1.1 syntax both sides need: a field line written,
//! numbers written in decimal and hex without `format!`, Content-Length
//! values, and comma-separated tokens.

use http::header::CONTENT_LENGTH;
use http::HeaderMap;

/// Appends the field line `name: value` (CRLF-ended).
#[inline]
pub fn push_field(dst: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    dst.extend_from_slice(name);
    dst.extend_from_slice(b": ");
    dst.extend_from_slice(value);
    dst.extend_from_slice(b"\r\n");
}

pub fn push_decimal(dst: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    dst.extend_from_slice(&digits[i..]);
}

pub fn push_hex(dst: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 16];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b"0123456789abcdef"[(n & 15) as usize];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    dst.extend_from_slice(&digits[i..]);
}

/// A Content-Length that does not give one length: a value that is not a number, or
/// values that disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid Content-Length")]
pub struct InvalidLength;

/// The message's Content-Length: `Ok(None)` without one. Like hyper, a comma-separated
/// list of equal values counts as one.
pub fn content_length(headers: &HeaderMap) -> Result<Option<u64>, InvalidLength> {
    let mut found = None;
    for value in headers.get_all(CONTENT_LENGTH) {
        add_length(&mut found, value.as_bytes())?;
    }
    Ok(found)
}

/// Adds one Content-Length line to what the earlier ones said.
pub fn add_length(found: &mut Option<u64>, value: &[u8]) -> Result<(), InvalidLength> {
    for part in value.split(|&b| b == b',') {
        let n = digits(trim(part)).ok_or(InvalidLength)?;
        match *found {
            Some(f) if f != n => return Err(InvalidLength),
            _ => *found = Some(n),
        }
    }
    Ok(())
}

/// A single Content-Length value: ASCII digits only (no sign, no list).
pub fn digits(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let mut n: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(n)
}

pub fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// Whether a header's comma-separated tokens include `token`.
pub fn has_token(value: &[u8], token: &str) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| trim(t).eq_ignore_ascii_case(token.as_bytes()))
}

/// Folds one `Connection` line into whether the connection stays open
/// (`keep_alive` starts as the version's default). Once a line asks to
/// close, no later one undoes it. True when the line says nothing but that
/// (`close`, `keep-alive`): the codec has then read all it means, and the
/// parsers leave it out of the head's map, which saves hashing it in and
/// the hop-by-hop pass taking it out again on every response from an upstream
/// that announces keep-alive (nginx does). A line naming other fields stays,
/// so those are removed with it (weir-http's `headers::strip_hop_by_hop`).
pub fn fold_connection(value: &[u8], keep_alive: &mut bool, saw_close: &mut bool) -> bool {
    let (mut close, mut keep, mut other) = (false, false, false);
    for t in value.split(|&b| b == b',').map(trim) {
        if t.eq_ignore_ascii_case(b"close") {
            close = true;
        } else if t.eq_ignore_ascii_case(b"keep-alive") {
            keep = true;
        } else if !t.is_empty() {
            other = true;
        }
    }
    if *saw_close || close {
        *saw_close = true;
        *keep_alive = false;
    } else if !*keep_alive {
        *keep_alive = keep;
    }
    !other
}

/// Whether a `Connection` line says nothing but `close` or `keep-alive` (the parsers
/// leave such a line out of the map; weir-proxy's differential tests compare around it).
pub fn only_persistence(value: &[u8]) -> bool {
    let (mut keep_alive, mut saw_close) = (true, false);
    fold_connection(value, &mut keep_alive, &mut saw_close)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        for n in [0u64, 1, 9, 10, 255, 4096, u64::MAX] {
            let mut v = Vec::new();
            push_decimal(&mut v, n);
            assert_eq!(String::from_utf8(v).unwrap(), n.to_string());
            let mut v = Vec::new();
            push_hex(&mut v, n);
            assert_eq!(String::from_utf8(v).unwrap(), format!("{n:x}"));
        }
    }

    #[test]
    fn content_lengths() {
        let mut h = HeaderMap::new();
        assert_eq!(content_length(&h), Ok(None));
        h.append(CONTENT_LENGTH, "5".parse().unwrap());
        assert_eq!(content_length(&h), Ok(Some(5)));
        h.append(CONTENT_LENGTH, "5, 5".parse().unwrap());
        assert_eq!(content_length(&h), Ok(Some(5)));
        h.append(CONTENT_LENGTH, "6".parse().unwrap());
        assert_eq!(content_length(&h), Err(InvalidLength));
        for bad in ["", "+5", "-1", "5x", "1,", "99999999999999999999"] {
            let mut h = HeaderMap::new();
            h.append(CONTENT_LENGTH, bad.parse().unwrap());
            assert_eq!(content_length(&h), Err(InvalidLength), "{bad:?}");
        }
    }
}
