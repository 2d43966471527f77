//! Rules that span tables or fields: references resolve, binds do not
//! collide, routes do not shadow each other, and limits make sense together.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use crate::diagnostic::MAX_DIAGNOSTICS;
use crate::host_match::HostMatch;
use crate::model::Protocol;
use crate::read::{Sink, Span};
use crate::suggest::missing;
use crate::walk::Walked;

pub(crate) fn check(sink: &mut Sink<'_>, w: &Walked) {
    references(sink, w);
    binds(sink, w);
    duplicate_routes(sink, w);
    prefixes_in_normal_form(sink, w);
    pool_limits(sink, w);
    tcp_pools(sink, w);
    crate::tls_check::check(sink, w);
    crate::certificate_check::check(sink, w);
    crate::filter_check::check(sink, w);
}

/// A tcp listener knows no requests: no headers, cookies or paths, and no
/// per-request latency, so only connection-level algorithms apply.
fn tcp_pools(sink: &mut Sink<'_>, w: &Walked) {
    use crate::model::{Balance, HashKey};
    let listener_pools = w.listeners.iter().filter_map(|(name, at)| {
        let l = &w.config.listeners[name];
        match (l.protocol, &at.pool, &l.pool) {
            (Protocol::Tcp, Some(span), Some(pool)) => Some((span, pool)),
            _ => None,
        }
    });
    // Routes of an sni_routing listener send connections to pools too.
    let route_pools = w.routes.iter().filter_map(|(name, at)| {
        let r = &w.config.routes[name];
        let tcp = w
            .config
            .listeners
            .get(&r.listener)
            .is_some_and(|l| l.protocol == Protocol::Tcp);
        at.pool.as_ref().filter(|_| tcp).map(|span| (span, &r.pool))
    });
    for (span, pool) in listener_pools.chain(route_pools) {
        let Some(p) = w.config.pools.get(pool) else {
            continue;
        };
        // Name things as the user wrote them: `ewma`, `header:x-user`.
        let why = match p.balance {
            Balance::Ewma | Balance::Sticky => Some(format!(
                "pool `{pool}` uses balance = \"{}\", which tcp listeners do not support",
                p.balance.as_str()
            )),
            Balance::Hash if p.hash_key != HashKey::ClientIp => {
                let key = match &p.hash_key {
                    HashKey::ClientIp => "client_ip".to_string(),
                    HashKey::Path => "path".to_string(),
                    HashKey::Header(n) => format!("header:{n}"),
                    HashKey::Cookie(n) => format!("cookie:{n}"),
                };
                Some(format!(
                    "pool `{pool}` hashes on hash_key = \"{key}\"; a tcp listener can only hash on client_ip"
                ))
            }
            _ => None,
        };
        if let Some(why) = why {
            sink.error(
                span.clone(),
                format!("{why} (tcp supports round_robin, least_conn, random, p2c, and hash on client_ip)"),
            );
        }
        // A tcp listener relays bytes: the pool's HTTP version is not its to choose.
        if p.protocol.is_h2() {
            sink.warn(
                span.clone(),
                format!("pool `{pool}` has an HTTP protocol (h2c/h2), which a tcp listener does not use: it relays the bytes as they come"),
            );
        }
    }
}

/// A reference to a listener or pool that does not exist.
struct Miss<'a> {
    span: Span,
    kind: &'static str,
    name: &'a str,
}

fn references(sink: &mut Sink<'_>, w: &Walked) {
    let cfg = &w.config;
    let mut misses = Vec::new();
    for (name, at) in &w.listeners {
        let l = &cfg.listeners[name];
        if let (Some(span), Some(pool)) = (&at.pool, &l.pool) {
            if !cfg.pools.contains_key(pool) {
                misses.push(Miss {
                    span: span.clone(),
                    kind: "pool",
                    name: pool,
                });
            }
        }
    }
    for (name, at) in &w.routes {
        let r = &cfg.routes[name];
        if let Some(span) = &at.listener {
            match cfg.listeners.get(&r.listener) {
                None => misses.push(Miss {
                    span: span.clone(),
                    kind: "listener",
                    name: &r.listener,
                }),
                Some(l) if l.protocol == Protocol::Tcp && !l.sni_routing => sink.error(
                    span.clone(),
                    format!(
                        "route `{name}` is on listener `{}`, which is a tcp listener; routes apply to http listeners only (a tcp listener sends everything to its `pool`)",
                        r.listener
                    ),
                ),
                Some(_) => {}
            }
        }
        if let Some(span) = &at.pool {
            if !cfg.pools.contains_key(&r.pool) {
                misses.push(Miss {
                    span: span.clone(),
                    kind: "pool",
                    name: &r.pool,
                });
            }
        }
    }
    for (name, at) in &w.certificates {
        let c = &cfg.certificates[name];
        if let Some(span) = &at.listener {
            if !cfg.listeners.contains_key(&c.listener) {
                misses.push(Miss {
                    span: span.clone(),
                    kind: "listener",
                    name: &c.listener,
                });
            }
        }
    }
    // A suggestion searches every name, so suggesting for every miss is quadratic
    // (5,000 routes to missing pools took 5 s). Only the first MAX_DIAGNOSTICS misses
    // in the file can be shown (each is an error that stays, at its own position), so
    // only they get one; the others are only counted.
    misses.sort_by_key(|m| m.span.start);
    let mut detailed = 0;
    for m in misses {
        let message = if detailed < MAX_DIAGNOSTICS && !sink.on_broken_line(m.span.start) {
            detailed += 1;
            let (plural, names): (&str, Vec<&str>) = match m.kind {
                "listener" => (
                    "listeners",
                    cfg.listeners.keys().map(String::as_str).collect(),
                ),
                _ => ("pools", cfg.pools.keys().map(String::as_str).collect()),
            };
            missing(m.kind, plural, m.name, names)
        } else {
            format!("no {} named `{}`", m.kind, m.name)
        };
        sink.error(m.span, message);
    }
}

fn binds(sink: &mut Sink<'_>, w: &Walked) {
    // (who, address, where); the admin listener counts too. An implicit
    // (default) admin address has no span and sorts first, so a listener
    // colliding with it gets the error.
    let mut taken: Vec<(String, SocketAddr, Option<Span>)> = vec![(
        "the admin API (admin.listen)".to_string(),
        w.config.admin.listen,
        w.admin_listen.clone(),
    )];
    for (name, at) in &w.listeners {
        if let Some(span) = &at.bind {
            taken.push((
                format!("listener `{name}`"),
                w.config.listeners[name].bind,
                Some(span.clone()),
            ));
        }
    }
    taken.sort_by_key(|(_, _, span)| span.as_ref().map_or(0, |s| s.start + 1));
    let earlier = first_overlapping(taken.iter().map(|(_, addr, _)| *addr));
    for ((_, addr, span), earlier) in taken.iter().zip(earlier) {
        // Port 0 asks the kernel for a free port: never a collision.
        let (Some(span), false) = (span, addr.port() == 0) else {
            continue;
        };
        if let Some((first, first_addr, _)) = earlier.map(|j| &taken[j]) {
            let msg = if first_addr == addr {
                format!("{addr} is already used by {first}")
            } else {
                format!("{addr} overlaps {first} on {first_addr} (same port)")
            };
            sink.error(span.clone(), msg);
        }
    }
}

/// For each socket, the first one before it that it overlaps: the two cannot both be
/// bound, being the same address, or the same port where one side is the wildcard of the
/// same family. So only sockets of the same port and family can overlap; per such group
/// this keeps the first socket, the first wildcard and the first of each address, and
/// each lookup takes constant time. (Comparing each with all before it was quadratic:
/// the 270,000 listeners that fit in 16 MiB took 40 s.)
fn first_overlapping(addrs: impl Iterator<Item = SocketAddr>) -> Vec<Option<usize>> {
    #[derive(Default)]
    struct Group {
        first: Option<usize>,
        wildcard: Option<usize>,
        by_ip: HashMap<IpAddr, usize>,
    }
    let mut groups: HashMap<(u16, bool), Group> = HashMap::new();
    let mut out = Vec::new();
    for (i, addr) in addrs.enumerate() {
        let g = groups.entry((addr.port(), addr.is_ipv4())).or_default();
        // A wildcard overlaps everything in its group; an address, itself and wildcards.
        out.push(if addr.ip().is_unspecified() {
            g.first
        } else {
            match (g.by_ip.get(&addr.ip()).copied(), g.wildcard) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        });
        g.first.get_or_insert(i);
        if addr.ip().is_unspecified() {
            g.wildcard.get_or_insert(i);
        }
        g.by_ip.entry(addr.ip()).or_insert(i);
    }
    out
}

fn duplicate_routes(sink: &mut Sink<'_>, w: &Walked) {
    let mut order: Vec<(&String, &crate::walk::RouteAt)> = w.routes.iter().collect();
    order.sort_by_key(|(_, at)| at.name.start);
    type Matcher<'a> = (
        &'a str,
        Option<&'a HostMatch>,
        Option<&'a HostMatch>,
        &'a str,
    );
    let mut seen: HashMap<Matcher<'_>, &str> = HashMap::new();
    for (name, at) in order {
        if at.listener.is_none() || !at.matcher_ok {
            continue;
        }
        let r = &w.config.routes[name.as_str()];
        let key = (
            r.listener.as_str(),
            r.host.as_ref(),
            r.sni.as_ref(),
            r.path_prefix.as_str(),
        );
        if let Some(first) = seen.get(&key) {
            sink.error(
                at.name.clone(),
                format!(
                    "route `{name}` has the same listener, {} as route `{first}`; only one of them could ever match",
                    if r.sni.is_some() { "and sni" } else { "host and path_prefix" }
                ),
            );
        } else {
            seen.insert(key, name);
        }
    }
}

/// Request paths are put in normal form before routing (`crate::path`): a prefix that is not
/// in that form (`/a//b`, `/a/./b`, `/%61`) could never match as written.
fn prefixes_in_normal_form(sink: &mut Sink<'_>, w: &Walked) {
    for (name, at) in &w.routes {
        let (Some(span), r) = (&at.path_prefix, &w.config.routes[name]) else {
            continue;
        };
        let Some(l) = w.config.listeners.get(&r.listener) else {
            continue;
        };
        let p = &r.path_prefix;
        match crate::path::normalize(p, l.path) {
            Ok(None) => {}
            Ok(Some(n)) => sink.warn(
                span.clone(),
                format!(
                    "path_prefix \"{p}\" never matches as written: request paths are put in normal form before routing, where it reads \"{n}\""
                ),
            ),
            Err(e) => sink.warn(
                span.clone(),
                format!("path_prefix \"{p}\" never matches: a request path like it is refused ({e})"),
            ),
        }
    }
}

fn pool_limits(sink: &mut Sink<'_>, w: &Walked) {
    for (name, at) in &w.pools {
        let p = &w.config.pools[name];
        if let Some(span) = &at.max_queue {
            // Either cap makes requests wait: the data plane queues when an
            // endpoint is at max_conn or the pool at max_conn_total.
            if p.max_queue > 0 && p.max_conn == 0 && p.max_conn_total == 0 {
                sink.error(
                    span.clone(),
                    "max_queue needs max_conn (or max_conn_total): with no limit (0) nothing ever waits; set max_conn or remove max_queue",
                );
            }
        }
        let h = &p.health;
        if h.timeout >= h.interval {
            // Point at whichever of the two the user wrote (timeout first).
            if let Some(span) = at
                .health_timeout
                .clone()
                .or(at.health_interval.clone())
                .or(at.health.clone())
            {
                sink.error(
                    span,
                    format!(
                        "health timeout ({:?}) must be shorter than interval ({:?}), or checks would overlap",
                        h.timeout, h.interval
                    ),
                );
            }
        }
        if let (Some(span), Some(per_try), true) = (
            &at.per_try_timeout,
            p.retry.per_try_timeout,
            at.response_timeout_ok,
        ) {
            if per_try >= p.response_timeout {
                sink.error(
                    span.clone(),
                    format!(
                        "per_try_timeout ({per_try:?}) must be shorter than the pool's response_timeout ({:?}), or it would never take effect",
                        p.response_timeout
                    ),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What overlapping means, said plainly.
    fn overlaps(a: SocketAddr, b: SocketAddr) -> bool {
        a.port() == b.port()
            && a.is_ipv4() == b.is_ipv4()
            && (a.ip() == b.ip() || a.ip().is_unspecified() || b.ip().is_unspecified())
    }

    #[test]
    fn first_overlapping_finds_what_comparing_with_every_earlier_socket_finds() {
        let ips = [
            "0.0.0.0",
            "127.0.0.1",
            "127.0.0.2",
            "[::]",
            "[::1]",
            "[::2]",
        ];
        let ports = [0, 80, 81];
        // A fixed pseudo-random sequence covering every pair many times over.
        let mut x: u32 = 7;
        let addrs: Vec<SocketAddr> = (0..600)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                let ip = ips[(x >> 8) as usize % ips.len()];
                let port = ports[(x >> 20) as usize % ports.len()];
                format!("{ip}:{port}").parse().unwrap()
            })
            .collect();
        let naive: Vec<Option<usize>> = addrs
            .iter()
            .enumerate()
            .map(|(i, a)| addrs[..i].iter().position(|b| overlaps(*b, *a)))
            .collect();
        assert_eq!(first_overlapping(addrs.iter().copied()), naive);
    }
}
