//! Small pieces of HTTP/1.1 syntax both sides need: numbers written in
//! decimal and hex without `format!`, Content-Length values, and
//! comma-separated tokens.

use http::header::CONTENT_LENGTH;
use http::HeaderMap;

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

/// The message's Content-Length: `Ok(None)` without one, `Err` when a value
/// is not a number or the values disagree. Like hyper, a comma-separated
/// list of equal values counts as one.
pub fn content_length(headers: &HeaderMap) -> Result<Option<u64>, ()> {
    let mut found = None;
    for value in headers.get_all(CONTENT_LENGTH) {
        add_length(&mut found, value.as_bytes())?;
    }
    Ok(found)
}

/// Adds one Content-Length line to what the earlier ones said.
pub fn add_length(found: &mut Option<u64>, value: &[u8]) -> Result<(), ()> {
    for part in value.split(|&b| b == b',') {
        let n = digits(trim(part)).ok_or(())?;
        match *found {
            Some(f) if f != n => return Err(()),
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
/// close, no later one undoes it.
pub fn fold_connection(value: &[u8], keep_alive: &mut bool, saw_close: &mut bool) {
    if *saw_close || has_token(value, "close") {
        *saw_close = true;
        *keep_alive = false;
    } else if !*keep_alive {
        *keep_alive = has_token(value, "keep-alive");
    }
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
        assert_eq!(content_length(&h), Err(()));
        for bad in ["", "+5", "-1", "5x", "1,", "99999999999999999999"] {
            let mut h = HeaderMap::new();
            h.append(CONTENT_LENGTH, bad.parse().unwrap());
            assert_eq!(content_length(&h), Err(()), "{bad:?}");
        }
    }
}
