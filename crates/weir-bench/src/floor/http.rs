//! The HTTP/1.1 framing both floor modes share: where a request head ends (the
//! bench's requests are GETs without a body) and where a response ends
//! (Content-Length framing). Byte by byte, no allocation: the floor forwards
//! each chunk as it arrives and only needs to know when a message is complete.

/// Counts request heads that end ("\r\n\r\n") in the bytes fed.
#[derive(Default)]
pub struct RequestFramer {
    /// How much of "\r\n\r\n" the last bytes matched.
    matched: u8,
}

impl RequestFramer {
    /// How many request heads end in `bytes`.
    pub fn feed(&mut self, bytes: &[u8]) -> usize {
        let mut ended = 0;
        for &c in bytes {
            self.matched = match (self.matched, c) {
                (3, b'\n') => {
                    ended += 1;
                    0
                }
                (1, b'\n') => 2,
                (2, b'\r') => 3,
                (_, b'\r') => 1,
                _ => 0,
            };
        }
        ended
    }
}

/// Counts responses that end in the bytes fed: a head, then Content-Length bytes.
#[derive(Default)]
pub struct ResponseFramer {
    /// Body bytes still to come; `None` while in the head.
    body_left: Option<u64>,
    /// The current head line, as much as fits (only Content-Length matters).
    line: [u8; 32],
    line_len: usize,
    /// The head's Content-Length so far.
    length: u64,
}

const CONTENT_LENGTH: &[u8] = b"content-length:";

impl ResponseFramer {
    /// How many responses end in `bytes`.
    pub fn feed(&mut self, mut bytes: &[u8]) -> usize {
        let mut ended = 0;
        while !bytes.is_empty() {
            if let Some(left) = self.body_left {
                let take = left.min(bytes.len() as u64);
                bytes = &bytes[take as usize..];
                if left == take {
                    self.body_left = None;
                    ended += 1;
                } else {
                    self.body_left = Some(left - take);
                }
                continue;
            }
            let c = bytes[0];
            bytes = &bytes[1..];
            if c != b'\n' {
                if self.line_len < self.line.len() {
                    self.line[self.line_len] = c;
                    self.line_len += 1;
                }
                continue;
            }
            // A line ended ("\r\n"); an empty one ends the head.
            let line = &self.line[..self.line_len.saturating_sub(1)];
            if line.is_empty() {
                let length = std::mem::take(&mut self.length);
                if length == 0 {
                    ended += 1;
                } else {
                    self.body_left = Some(length);
                }
            } else if line.len() > CONTENT_LENGTH.len()
                && line[..CONTENT_LENGTH.len()].eq_ignore_ascii_case(CONTENT_LENGTH)
            {
                self.length = line[CONTENT_LENGTH.len()..]
                    .iter()
                    .filter(|c| c.is_ascii_digit())
                    .fold(0, |n, &c| n * 10 + u64::from(c - b'0'));
            }
            self.line_len = 0;
        }
        ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_heads_end_across_chunks() {
        let mut f = RequestFramer::default();
        assert_eq!(f.feed(b"GET / HTTP/1.1\r\nHost: a\r\n\r"), 0);
        assert_eq!(f.feed(b"\nGET / HTTP/1.1\r\n\r\n"), 2);
    }

    #[test]
    fn responses_end_after_their_content_length() {
        let mut f = ResponseFramer::default();
        let r = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nx: y\r\n\r\nhello";
        assert_eq!(f.feed(&r[..20]), 0);
        assert_eq!(f.feed(&r[20..r.len() - 1]), 0);
        assert_eq!(f.feed(&r[r.len() - 1..]), 1);
        assert_eq!(
            f.feed(
                b"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
            ),
            2
        );
    }
}
