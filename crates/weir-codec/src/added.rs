//! The fields weir adds to a request for its upstream, `X-Forwarded-For`, `Forwarded`,
//! `X-Forwarded-Proto` and `X-Forwarded-Host`, kept beside the request's map when the
//! client brought none of them to merge with (`headers::for_upstream`), and written by the
//! upstream codecs after the map's own fields (HTTP/1 `encode::head`, HTTP/2
//! `send_request`).
//!
//! Why not in the map: an insert into an `http::HeaderMap` hashes the name a byte at a time
//! (FNV) and probes, ~250 instructions a field (callgrind), and nothing reads these again
//! before they are written out. The balancer's header key reads them through
//! [`Added::get`]. The client's two are borrowed from its connection, where they are made
//! once: a clone would take and drop a shared count per request.

use http::header::HeaderValue;

/// The forwarding fields for one request (none for a request weir makes itself).
#[derive(Debug, Clone, Default)]
pub struct Added<'c> {
    pub forwarded_for: Option<&'c HeaderValue>,
    pub forwarded: Option<&'c HeaderValue>,
    pub proto: Option<&'static str>,
    pub host: Option<HeaderValue>,
}

impl Added<'_> {
    /// Nothing added: a request made by weir itself (a health check, a sub-request).
    pub const NONE: Added<'static> = Added {
        forwarded_for: None,
        forwarded: None,
        proto: None,
        host: None,
    };

    /// Each field's (lower-case) name and value, in the order they go out.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &[u8])> {
        [
            (
                "x-forwarded-for",
                self.forwarded_for.map(HeaderValue::as_bytes),
            ),
            ("forwarded", self.forwarded.map(HeaderValue::as_bytes)),
            ("x-forwarded-proto", self.proto.map(str::as_bytes)),
            (
                "x-forwarded-host",
                self.host.as_ref().map(HeaderValue::as_bytes),
            ),
        ]
        .into_iter()
        .filter_map(|(n, v)| Some((n, v?)))
    }

    /// The value of the field named `name` (lower case), if it is one added here.
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}
