//! The request's host: the one `Host` field HTTP/1.1 requires, or the
//! authority of an absolute-form target, which overrides it.

use http::header::{self, HeaderValue};
use http::{Request, Version};

/// The host to route by and to send upstream; `Err` when the request
/// breaks RFC 9112 §3.2 (no Host in HTTP/1.1, or more than one): 400.
pub fn request_host<B>(req: &Request<B>) -> Result<Option<HeaderValue>, ()> {
    let mut hosts = req.headers().get_all(header::HOST).iter();
    let host_hdr = hosts.next().cloned();
    if hosts.next().is_some() || (host_hdr.is_none() && req.version() == Version::HTTP_11) {
        return Err(());
    }
    // An absolute-form target's authority overrides Host (RFC 9112 §3.2.2).
    Ok(match req.uri().authority() {
        Some(a) => HeaderValue::from_str(a.as_str()).ok(),
        None => host_hdr,
    })
}
