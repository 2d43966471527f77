//! `kind = "body_limit"`: a `Content-Length` over the limit is answered 413 before a byte of
//! the body is read (so a client waiting on `Expect: 100-continue` gets the 413 instead of
//! `100 Continue`); a body without a length is counted as it streams
//! (`ClientBody::limited`) and the request fails with 413 `body_too_large` when it passes.

use http::header::CONTENT_LENGTH;
use http::Request;
use http_body::Body;

use crate::cx::Cx;
use crate::kind::Kind;
use crate::verdict::Verdict;
use weir_codec::client_body::ClientBody;
use weir_http::error::error_response;
use weir_metrics::reason::Reason;

#[derive(Debug)]
pub struct BodyLimit {
    max: u64,
}

impl BodyLimit {
    pub fn build(b: &weir_config::filter::BodyLimit) -> BodyLimit {
        BodyLimit { max: b.max_bytes }
    }
}

impl Kind for BodyLimit {
    fn build(_name: &str, f: &weir_config::Filter) -> Option<Result<Self, String>> {
        let weir_config::Filter::BodyLimit(b) = f else {
            return None;
        };
        Some(Ok(BodyLimit::build(b)))
    }

    fn request(&self, _cx: &mut Cx<'_>, req: &mut Request<ClientBody>) -> Verdict {
        if req.body().is_end_stream() {
            return Verdict::Continue;
        }
        // The codecs checked the field's syntax: one valid length, or none.
        let length = req
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|s| s.parse::<u64>().ok());
        match length {
            Some(n) if n > self.max => Verdict::Answer(
                Box::new(error_response(Reason::BodyTooLarge)),
                Reason::BodyTooLarge,
            ),
            // The codec holds the body to its length.
            Some(_) => Verdict::Continue,
            None => {
                let body = std::mem::take(req.body_mut());
                *req.body_mut() = body.limited(self.max);
                Verdict::Continue
            }
        }
    }
}
