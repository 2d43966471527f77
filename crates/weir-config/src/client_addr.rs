//! The keys about the client's real address: a listener's `trusted_proxies`
//! and `proxy_protocol`, a pool's `send_proxy`, read here so the tables that use them
//! (`walk.rs`) only call in. Their types are in cidr.rs and send_proxy.rs, below the model.

use toml::de::DeValue;

use crate::cidr::Cidr;
use crate::model::{Listener, Protocol};
use crate::read::{self, Fields, Sink};
use crate::send_proxy::SendProxy;

pub(crate) const SEND_PROXY: &[(&str, SendProxy)] = &[("v1", SendProxy::V1), ("v2", SendProxy::V2)];

/// `trusted_proxies`: an array of CIDR blocks or addresses, each error at its element.
/// `None` when the key is absent or the value is not an array.
pub(crate) fn trusted_proxies(sink: &mut Sink<'_>, t: &Fields<'_, '_>) -> Option<Vec<Cidr>> {
    let v = t.get("trusted_proxies")?;
    let items = read::array(sink, v)?;
    if items.is_empty() {
        sink.error(
            v.span(),
            "trusted_proxies is empty: list the proxies in front of weir (e.g. [\"10.0.0.0/8\"]) or leave the key out",
        );
        return None;
    }
    let mut out = Vec::with_capacity(items.len());
    for item in items.iter() {
        match item.get_ref() {
            DeValue::String(s) => match Cidr::parse(s) {
                Ok(c) => out.push(c),
                Err(msg) => sink.error(item.span(), format!("trusted_proxies: {msg}")),
            },
            _ => read::wrong_type(
                sink,
                item,
                "a string (an address or CIDR block, e.g. \"10.0.0.0/8\")",
            ),
        }
    }
    Some(out)
}

/// A listener's `trusted_proxies` and `proxy_protocol`, read into `l` (its `protocol` read
/// before).
pub(crate) fn listener(sink: &mut Sink<'_>, t: &Fields<'_, '_>, l: &mut Listener) {
    if let Some(list) = trusted_proxies(sink, t) {
        l.trusted_proxies = list;
    }
    if let Some(v) = t.get("proxy_protocol") {
        match v.get_ref().as_bool() {
            Some(b) => l.proxy_protocol = b,
            None => read::wrong_type(sink, v, "a boolean"),
        }
        // A header from anyone would let any client claim any address. (A list with a bad
        // element was reported there already.)
        if l.proxy_protocol && t.get("trusted_proxies").is_none() {
            sink.error(
                v.span(),
                "proxy_protocol needs trusted_proxies: the peers allowed to send a PROXY header (e.g. trusted_proxies = [\"10.0.0.0/8\"]); a header from anyone else would let a client claim any address",
            );
        }
    }
    if l.protocol == Protocol::Tcp && !l.proxy_protocol {
        if let Some(span) = t.key_span("trusted_proxies") {
            sink.warn(
                span,
                "trusted_proxies has no effect on a tcp listener without proxy_protocol (a tcp listener reads no X-Forwarded-For)",
            );
        }
    }
}
