//! The cookie that keeps a client on the endpoint that answered it, set on
//! each upstream answer of a sticky pool (the balancer reads it back:
//! `http/forward/keys.rs`).

use http::header::{self, HeaderValue};

use weir_upstream::pool::PoolRt;

/// On a sticky pool, the cookie naming the endpoint that answered, unless
/// the request already named it (`sticky_from`).
pub fn set_sticky(pool: &PoolRt, sticky_from: Option<u64>, h: &mut http::HeaderMap, ep_id: u64) {
    let Some(codec) = pool.algorithm.sticky_codec() else {
        return;
    };
    if sticky_from == Some(ep_id) {
        return;
    }
    let c = format!(
        "{}={}; Path=/; HttpOnly; SameSite=Lax",
        pool.sticky_cookie,
        codec.encode(ep_id)
    );
    if let Ok(v) = HeaderValue::from_str(&c) {
        h.append(header::SET_COOKIE, v);
    }
}
