//! A response's field block made a response head, with the rules of RFC 9113 §8.3.2 checked
//! as each field arrives (a malformed response is the stream's PROTOCOL_ERROR).

use http::{HeaderMap, StatusCode};

use crate::field::{self, Malformed};
use crate::hpack::Parsed;

/// A response as its HEADERS said it.
#[derive(Debug)]
pub struct ResponseHead {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// `content-length`, which the stream's DATA must add up to.
    pub content_length: Option<u64>,
}

/// Collects a response's (or trailers') fields in order.
#[derive(Default)]
pub struct Builder {
    status: Option<StatusCode>,
    headers: HeaderMap,
    regular_seen: bool,
    content_length: Option<u64>,
    /// The first rule broken; later fields are ignored.
    error: Option<Malformed>,
}

impl Builder {
    pub fn new(expected_fields: usize) -> Builder {
        Builder {
            headers: HeaderMap::with_capacity(expected_fields),
            ..Builder::default()
        }
    }

    /// One field. `trailers`: a trailer section's, where no pseudo-field may be. `cached`:
    /// its dynamic table slot (see `field::regular`).
    pub fn field(
        &mut self,
        name: &[u8],
        value: &[u8],
        sensitive: bool,
        trailers: bool,
        cached: Option<&mut Option<Parsed>>,
    ) {
        if self.error.is_none() {
            if let Err(why) = self.add(name, value, sensitive, trailers, cached) {
                self.error = Some(why);
            }
        }
    }

    fn add(
        &mut self,
        name: &[u8],
        value: &[u8],
        sensitive: bool,
        trailers: bool,
        cached: Option<&mut Option<Parsed>>,
    ) -> Result<(), Malformed> {
        if name.first() == Some(&b':') {
            if trailers {
                return Err("a pseudo-field in trailers");
            }
            if self.regular_seen {
                return Err("a pseudo-field after a regular field");
            }
            if name != b":status" {
                return Err("a pseudo-field other than :status in a response");
            }
            if self.status.is_some() {
                return Err("two :status fields");
            }
            if value.len() != 3 {
                return Err("a :status not of three digits");
            }
            let s = StatusCode::from_bytes(value).map_err(|_| "an invalid :status")?;
            self.status = Some(s);
            return Ok(());
        }
        self.regular_seen = true;
        field::regular(
            &mut self.headers,
            &mut self.content_length,
            name,
            value,
            sensitive,
            trailers,
            cached,
        )
    }

    /// The response head, once every field is in.
    pub fn response(self) -> Result<ResponseHead, Malformed> {
        if let Some(why) = self.error {
            return Err(why);
        }
        Ok(ResponseHead {
            status: self.status.ok_or("no :status")?,
            headers: self.headers,
            content_length: self.content_length,
        })
    }

    /// A trailer section's fields.
    pub fn trailers(self) -> Result<HeaderMap, Malformed> {
        match self.error {
            Some(why) => Err(why),
            None => Ok(self.headers),
        }
    }
}
