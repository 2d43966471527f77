//! The static table (RFC 7541 Appendix A) and a decoder's dynamic table (§2.3.2, §4).

use std::collections::VecDeque;

use bytes::Bytes;

/// RFC 7541 Appendix A: index 1 is `STATIC[0]`.
pub const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// What an entry costs in a table: its bytes and 32 (§4.1).
pub fn entry_size(name: &[u8], value: &[u8]) -> usize {
    name.len() + value.len() + 32
}

/// A field as the connection layer made it (checked, in `http`'s types), kept with its table
/// entry: a peer with an indexing encoder refers to the same entries request after request,
/// and a clone costs no allocation or check.
#[derive(Debug, Clone)]
pub enum Parsed {
    /// A regular field.
    Field(http::HeaderName, http::HeaderValue),
    /// A request's `:path`.
    Path(http::uri::PathAndQuery),
    /// A request's `:authority`.
    Authority(http::uri::Authority),
}

/// A dynamic table entry.
#[derive(Debug)]
pub struct Entry {
    pub name: Bytes,
    pub value: Bytes,
    /// Filled by the connection layer the first time it takes the field.
    pub parsed: Option<Parsed>,
}

/// A decoder's dynamic table: newest first, evicted oldest first to stay within its size.
#[derive(Debug)]
pub struct Dynamic {
    entries: VecDeque<Entry>,
    size: usize,
    max: usize,
}

impl Dynamic {
    pub fn new(max: usize) -> Dynamic {
        Dynamic {
            entries: VecDeque::new(),
            size: 0,
            max,
        }
    }

    pub fn max(&self) -> usize {
        self.max
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The entry `i` places from the newest (0 is the newest).
    pub fn get(&self, i: usize) -> Option<&Entry> {
        self.entries.get(i)
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut Entry> {
        self.entries.get_mut(i)
    }

    /// A new size (a size update): entries evicted until the table fits it.
    pub fn resize(&mut self, max: usize) {
        self.max = max;
        self.evict_to(max);
    }

    /// Adds an entry, evicting as needed, and gives it back; one larger than the whole table
    /// empties it and is not kept (§4.4): `None`.
    pub fn insert(&mut self, name: Bytes, value: Bytes) -> Option<&mut Entry> {
        let size = entry_size(&name, &value);
        if size > self.max {
            self.entries.clear();
            self.size = 0;
            return None;
        }
        self.evict_to(self.max - size);
        self.size += size;
        self.entries.push_front(Entry {
            name,
            value,
            parsed: None,
        });
        self.entries.front_mut()
    }

    fn evict_to(&mut self, room: usize) {
        while self.size > room {
            let Some(e) = self.entries.pop_back() else {
                break;
            };
            self.size -= entry_size(&e.name, &e.value);
        }
    }

    #[cfg(test)]
    pub fn size(&self) -> usize {
        self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_oldest_first_and_never_overflows() {
        let mut t = Dynamic::new(100);
        let b = |s: &str| Bytes::copy_from_slice(s.as_bytes());
        t.insert(b("a"), b("1234567890")); // 43
        t.insert(b("b"), b("1234567890")); // 86
        assert_eq!((t.len(), t.size()), (2, 86));
        t.insert(b("c"), b("1234567890")); // evicts a
        assert_eq!(t.get(0).unwrap().name, "c");
        assert_eq!(t.get(1).unwrap().name, "b");
        assert_eq!((t.len(), t.size()), (2, 86));
        t.resize(50);
        assert_eq!((t.len(), t.size()), (1, 43));
        t.insert(b("big"), Bytes::from(vec![b'x'; 100]));
        assert_eq!((t.len(), t.size()), (0, 0));
    }
}
