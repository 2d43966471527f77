//! The request as the upstream hop gets it: origin-form target, hop-by-hop
//! fields removed, `X-Forwarded-*` and `Forwarded` added, the verified client
//! certificate's subject and its `x-forwarded-client-cert` element in the listener's headers
//! for them (and never the client's own values of those), the routed host as `Host`, and
//! HTTP/1.1 whatever the client spoke.

use http::header::{self, HeaderValue};
use http::uri::PathAndQuery;
use http::{Request, Uri, Version};

use crate::http::conn_ctx::ConnCtx;
use weir_codec::added::Added;
use weir_http::headers;

/// `host` is the client's (X-Forwarded-Host, and Host unless a filter chose `upstream_host`).
/// `upgrade`: the protocols the client asked to switch to (`http/upgrade.rs`),
/// kept for the upstream hop. The forwarding fields that are not in the map come back, for
/// the upstream codec to write (`codec::added`).
pub fn for_upstream<'c, B>(
    req: &mut Request<B>,
    ctx: &'c ConnCtx,
    host: Option<HeaderValue>,
    upstream_host: Option<HeaderValue>,
    upgrade: Option<HeaderValue>,
) -> Added<'c> {
    if req.uri().authority().is_some() {
        // The target's own path, taken (not parsed again from its text, nor cloned: a
        // shared count taken and dropped).
        let mut origin = http::uri::Parts::default();
        origin.path_and_query = Some(
            std::mem::take(req.uri_mut())
                .into_parts()
                .path_and_query
                .unwrap_or_else(|| PathAndQuery::from_static("/")),
        );
        *req.uri_mut() = Uri::from_parts(origin).unwrap_or_else(|_| Uri::from_static("/"));
    }
    let h = req.headers_mut();
    // Hop-by-hop fields and `Expect` out (weir answers `Expect: 100-continue` itself: the
    // server codec sends 100 when the body is first read, i.e. once the upstream is
    // connected); a trusted proxy's chain is kept and the peer appended, anyone else's
    // replaced.
    let added = headers::for_upstream(
        h,
        &ctx.conn.forwarding(),
        host.as_ref(),
        ctx.conn.trusted.is_some(),
    );
    if let Some(u) = upgrade {
        crate::http::upgrade::keep(h, u);
    }
    let tls = ctx.conn.tls.as_deref();
    let client_cert = tls.and_then(|t| t.client.as_deref());
    if let Some(name) = tls.and_then(|t| t.identity_header.as_ref()) {
        h.remove(name);
        if let Some(c) = client_cert {
            h.insert(name.clone(), c.subject.clone());
        }
    }
    if let Some(name) = tls.and_then(|t| t.cert_header.as_ref()) {
        h.remove(name);
        if let Some(c) = client_cert {
            h.insert(name.clone(), c.forwarded.clone());
        }
    }
    if let Some(v) = upstream_host.or(host) {
        h.insert(header::HOST, v);
    }
    *req.version_mut() = Version::HTTP_11;
    added
}
