//! A response's field block made a response head, with the rules of RFC 9113 §8.3.2 checked
//! as each field arrives (a malformed response is the stream's PROTOCOL_ERROR).

use http::{HeaderMap, StatusCode};

use crate::field::{Fields, Malformed, Pseudo};
use crate::hpack::Parsed;

/// A response as its HEADERS said it.
#[derive(Debug)]
pub struct ResponseHead {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// `content-length`, which the stream's DATA must add up to.
    pub content_length: Option<u64>,
}

/// A response's one pseudo-field.
#[derive(Default)]
pub struct Status(Option<StatusCode>);

impl Pseudo for Status {
    fn pseudo(
        &mut self,
        name: &[u8],
        value: &[u8],
        _: Option<&mut Option<Parsed>>,
    ) -> Result<(), Malformed> {
        if name != b"status" {
            return Err("a pseudo-field other than :status in a response");
        }
        if self.0.is_some() {
            return Err("two :status fields");
        }
        if value.len() != 3 {
            return Err("a :status not of three digits");
        }
        self.0 = Some(StatusCode::from_bytes(value).map_err(|_| "an invalid :status")?);
        Ok(())
    }
}

/// Collects a response's (or trailers') fields in order.
pub type Builder = Fields<Status>;

impl Fields<Status> {
    /// The response head, once every field is in.
    pub fn response(self) -> Result<ResponseHead, Malformed> {
        if let Some(why) = self.error {
            return Err(why);
        }
        Ok(ResponseHead {
            status: self.pseudo.0.ok_or("no :status")?,
            headers: self.headers,
            content_length: self.content_length,
        })
    }
}
