//! What the balancer needs from a request: a hash of the pool's key, the
//! endpoint a sticky cookie names (the cookie itself is `http/sticky.rs`).

use std::net::SocketAddr;

use http::header;
use http::Request;
use weir_config::HashKey;

use weir_codec::added::Added;
use weir_upstream::balance::{hash_bytes, ip_hash, Algorithm, PickKey};
use weir_upstream::pool::PoolRt;

/// What the pool's algorithm needs from the request: a hash of the
/// configured key, or the endpoint a sticky cookie names. A header key is
/// read as the upstream gets it: the forwarding fields weir sets (`added`)
/// first.
pub fn pick_key<B>(
    pool: &PoolRt,
    req: &Request<B>,
    added: &Added<'_>,
    client: SocketAddr,
) -> PickKey {
    let mut key = PickKey::default();
    let (hashes, codec) = match &pool.algorithm {
        Algorithm::Hash { .. } => (true, None),
        Algorithm::Sticky { codec, base } => {
            (matches!(**base, Algorithm::Hash { .. }), Some(codec))
        }
        _ => return key,
    };
    if hashes {
        key.hash = match &pool.hash_key {
            HashKey::ClientIp => Some(ip_hash(client.ip())),
            HashKey::Path => Some(hash_bytes(req.uri().path().as_bytes())),
            HashKey::Header(h) => added
                .get(h.as_str())
                .or_else(|| req.headers().get(h.as_str()).map(|v| v.as_bytes()))
                .map(hash_bytes),
            HashKey::Cookie(c) => cookie(req.headers(), c).map(|v| hash_bytes(v.as_bytes())),
        };
    }
    if let Some(codec) = codec {
        key.sticky = cookie(req.headers(), &pool.sticky_cookie).and_then(|v| codec.decode(v));
    }
    key
}

/// The value of cookie `name` in the request's Cookie headers.
fn cookie<'a>(headers: &'a http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim_matches('"'))
}
