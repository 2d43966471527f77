//! Walks the spanned TOML tree into the model, one table at a time, applying
//! defaults and checking everything that is local to a table. Rules that span
//! tables live in `validate`.

use std::collections::{BTreeMap, HashMap};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use toml::de::{DeTable, DeValue};

use crate::addr::Use;
use crate::certificate::{self, CertificateAt};
use crate::client_addr;
use crate::filter::FilterAt;
use crate::model::{
    AccessLog, Admin, Balance, Config, DnsName, Endpoint, Global, HashKey, Health, HealthCheck,
    InitialState, Listener, NamedEndpoint, NoHealthy, Pool, Protocol, Retry, Route,
    UpstreamProtocol,
};
use crate::read::{self, Fields, Sink, Span};
use crate::request_path::check_path;
use crate::tls::{ListenerTlsAt, PoolTlsAt};
use crate::{defaults, dns_name, host, tls};

const ROOT_KEYS: &[&str] = &[
    "global",
    "admin",
    "listeners",
    "routes",
    "pools",
    "certificates",
    "filters",
];
const GLOBAL_KEYS: &[&str] = &["drain_grace", "resolvers", "dns_min_ttl", "dns_max_ttl"];
const ADMIN_KEYS: &[&str] = &["listen", "token_file"];
const LISTENER_KEYS: &[&str] = &[
    "bind",
    "protocol",
    "pool",
    "header_timeout",
    "idle_timeout",
    "upgrade_idle_timeout",
    "max_header_bytes",
    "access_log",
    "tls",
    "sni_routing",
    "trusted_proxies",
    "proxy_protocol",
    "filters",
    "merge_slashes",
    "escaped_slashes",
];
const ROUTE_KEYS: &[&str] = &[
    "listener",
    "host",
    "path_prefix",
    "pool",
    "sni",
    "https_redirect",
    "https_port",
    "hsts",
    "filters",
];
const POOL_KEYS: &[&str] = &[
    "balance",
    "endpoints",
    "max_conn",
    "max_conn_total",
    "max_queue",
    "queue_timeout",
    "overflow_status",
    "hash_key",
    "hash_balance_factor",
    "sticky_cookie",
    "sticky_base",
    "sticky_secret",
    "slow_start",
    "max_conn_age",
    "max_requests_per_conn",
    "protocol",
    "max_streams_per_conn",
    "ping_interval",
    "ping_timeout",
    "connect_timeout",
    "response_timeout",
    "request_timeout",
    "idle_timeout",
    "health",
    "retry",
    "tls",
    "send_proxy",
];
const ENDPOINT_KEYS: &[&str] = &["addr", "srv", "weight"];
const HEALTH_KEYS: &[&str] = &[
    "check",
    "path",
    "expect_status",
    "interval",
    "timeout",
    "rise",
    "fall",
    "host",
    "expect_body",
    "service",
    "initial",
    "eject_after",
    "eject_status",
    "eject_time",
    "max_ejection_percent",
    "no_healthy",
];
const RETRY_KEYS: &[&str] = &[
    "attempts",
    "buffer",
    "per_try_timeout",
    "on_status",
    "on_grpc_status",
    "budget_percent",
    "budget_min_per_sec",
];

const PROTOCOLS: &[(&str, Protocol)] = &[("http", Protocol::Http), ("tcp", Protocol::Tcp)];
const BALANCES: &[(&str, Balance)] = &[
    ("round_robin", Balance::RoundRobin),
    ("least_conn", Balance::LeastConn),
    ("random", Balance::Random),
    ("p2c", Balance::P2c),
    ("ewma", Balance::Ewma),
    ("hash", Balance::Hash),
    ("sticky", Balance::Sticky),
];
/// `balance`'s spelling in the config, for messages.
impl Balance {
    /// The name the config file uses for this algorithm.
    pub fn as_str(self) -> &'static str {
        BALANCES
            .iter()
            .find(|(_, v)| *v == self)
            .map_or("?", |(n, _)| *n)
    }
}

const CHECKS: &[(&str, HealthCheck)] = &[
    ("none", HealthCheck::None),
    ("tcp", HealthCheck::Tcp),
    ("http", HealthCheck::Http),
    ("grpc", HealthCheck::Grpc),
];
const UPSTREAM_PROTOCOLS: &[(&str, UpstreamProtocol)] = &[
    ("http1", UpstreamProtocol::Http1),
    ("h2c", UpstreamProtocol::H2c),
    ("h2", UpstreamProtocol::H2),
];
const INITIAL_STATES: &[(&str, InitialState)] = &[
    ("healthy", InitialState::Healthy),
    ("unhealthy", InitialState::Unhealthy),
];
const NO_HEALTHY: &[(&str, NoHealthy)] = &[
    ("fail_open", NoHealthy::FailOpen),
    ("fail_closed", NoHealthy::FailClosed),
];

/// Placeholder for a required address that was missing or invalid; the load
/// fails anyway, and port 0 keeps it out of the duplicate-bind check.
const NO_ADDR: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0);

/// The model plus where things were written, for cross-table checks. A span
/// is `Some` only when the value was present and valid, so later checks never
/// pile onto an error already reported.
pub(crate) struct Walked {
    pub config: Config,
    pub admin_listen: Option<Span>,
    /// The `token_file` key, when it names a file.
    pub token_file: Option<Span>,
    pub listeners: BTreeMap<String, ListenerAt>,
    pub routes: BTreeMap<String, RouteAt>,
    pub pools: BTreeMap<String, PoolAt>,
    pub certificates: BTreeMap<String, CertificateAt>,
    /// Every filter written, read or not, so a route naming one that does not read is not
    /// also told it does not exist.
    pub filters: BTreeMap<String, FilterAt>,
}

#[derive(Clone)]
pub(crate) struct ListenerAt {
    pub bind: Option<Span>,
    pub pool: Option<Span>,
    pub tls: ListenerTlsAt,
    /// `sni_routing = true`.
    pub sni_routing: Option<Span>,
    /// Each name in `filters`, in order.
    pub filters: Vec<Span>,
}

#[derive(Clone)]
pub(crate) struct RouteAt {
    pub name: Span,
    pub listener: Option<Span>,
    pub pool: Option<Span>,
    /// A valid `host`.
    pub host: Option<Span>,
    /// A valid `sni`.
    pub sni: Option<Span>,
    /// `https_redirect = true`, `hsts`.
    pub https_redirect: Option<Span>,
    pub hsts: Option<Span>,
    /// Each name in `filters`, in order.
    pub filters: Vec<Span>,
    /// host and path_prefix both valid (or defaulted), so duplicates can be judged.
    pub matcher_ok: bool,
    /// A valid `path_prefix`.
    pub path_prefix: Option<Span>,
}

#[derive(Clone)]
pub(crate) struct PoolAt {
    pub max_queue: Option<Span>,
    pub health_interval: Option<Span>,
    pub health_timeout: Option<Span>,
    /// The `health` key, when the table exists.
    pub health: Option<Span>,
    /// The health table's `check` value.
    pub health_check: Option<Span>,
    pub per_try_timeout: Option<Span>,
    /// `response_timeout` is absent or valid, so rules comparing with it apply.
    pub response_timeout_ok: bool,
    pub tls: PoolTlsAt,
    /// Each of `named`'s names, in order.
    pub named: Vec<Span>,
}

/// No resources, default settings.
pub(crate) fn empty() -> Walked {
    Walked {
        config: Config::default(),
        admin_listen: None,
        token_file: None,
        listeners: BTreeMap::new(),
        routes: BTreeMap::new(),
        pools: BTreeMap::new(),
        certificates: BTreeMap::new(),
        filters: BTreeMap::new(),
    }
}

pub(crate) fn document(sink: &mut Sink<'_>, doc: &DeTable<'_>, root_span: Span) -> Walked {
    let root = Fields {
        map: doc,
        span: root_span,
    };
    root.check_keys(sink, ROOT_KEYS);
    let mut w = empty();
    if let Some(t) = root.get("global").and_then(|v| read::table(sink, v)) {
        w.config.global = global(sink, &t);
    }
    if let Some(t) = root.get("admin").and_then(|v| read::table(sink, v)) {
        (w.config.admin, w.admin_listen) = admin(sink, &t);
        if w.config.admin.token_file.is_some() {
            w.token_file = t.key_span("token_file");
        }
    }
    for (name, _, t) in resources(sink, &root, "listeners", "listener") {
        let (l, at) = listener(sink, name, &t);
        w.config.listeners.insert(name.to_string(), l);
        w.listeners.insert(name.to_string(), at);
    }
    for (name, span, t) in resources(sink, &root, "routes", "route") {
        let (r, at) = route(sink, name, span, &t);
        w.config.routes.insert(name.to_string(), r);
        w.routes.insert(name.to_string(), at);
    }
    for (name, _, t) in resources(sink, &root, "pools", "pool") {
        let (p, at) = pool(sink, name, &t);
        w.config.pools.insert(name.to_string(), p);
        w.pools.insert(name.to_string(), at);
    }
    let now = std::time::SystemTime::now();
    for (name, _, t) in resources(sink, &root, "certificates", "certificate") {
        let (c, at) = certificate::read(sink, name, &t, now, certificate::Dates::Refuse);
        w.config.certificates.insert(name.to_string(), c);
        w.certificates.insert(name.to_string(), at);
    }
    for (name, _, t) in resources(sink, &root, "filters", "filter") {
        let (f, at) = crate::filter::read(sink, name, &t);
        if let Some(f) = f {
            w.config.filters.insert(name.to_string(), f);
        }
        w.filters.insert(name.to_string(), at);
    }
    w
}

/// The named tables under `[KIND.NAME]`, with names checked. Invalid names are
/// still returned so that references to them do not also fail.
fn resources<'a, 'i>(
    sink: &mut Sink<'_>,
    root: &Fields<'a, 'i>,
    kind: &str,
    what: &str,
) -> Vec<(&'a str, Span, Fields<'a, 'i>)> {
    let Some(t) = root.get(kind).and_then(|v| read::table(sink, v)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, span, v) in t.entries() {
        let DeValue::Table(map) = v.get_ref() else {
            sink.error(
                v.span(),
                format!(
                    "expected a table [{kind}.{name}], found {}",
                    read::a_type(v.get_ref())
                ),
            );
            continue;
        };
        check_name(sink, name, span.clone(), what);
        out.push((
            name,
            span,
            Fields {
                map,
                span: v.span(),
            },
        ));
    }
    out
}

/// A resource name: what the API and the file both allow.
pub(crate) fn check_name(sink: &mut Sink<'_>, name: &str, span: Span, what: &str) {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        sink.error(
            span,
            format!(
                "invalid {what} name `{name}`: names may only contain letters, digits, `_` and `-`"
            ),
        );
    }
}

fn global(sink: &mut Sink<'_>, t: &Fields<'_, '_>) -> Global {
    t.check_keys(sink, GLOBAL_KEYS);
    let mut g = Global::default();
    // Zero is meaningful here: stop at once without waiting for requests.
    if let Some(d) = t.duration(sink, "drain_grace", false) {
        g.drain_grace = d;
    }
    if let Some(v) = t.get("resolvers") {
        if let Some(items) = read::array(sink, v) {
            for item in items.iter() {
                if let Some(a) = resolver(sink, item) {
                    g.resolvers.push(a);
                }
            }
        }
    }
    // Zero would ask again without pause for a name whose TTL is 0.
    if let Some(d) = t.duration(sink, "dns_min_ttl", true) {
        g.dns_min_ttl = d;
    }
    if let Some(d) = t.duration(sink, "dns_max_ttl", true) {
        g.dns_max_ttl = d;
    }
    if g.dns_min_ttl > g.dns_max_ttl {
        if let Some(v) = t.get("dns_min_ttl").or(t.get("dns_max_ttl")) {
            sink.error(
                v.span(),
                format!(
                    "dns_min_ttl ({:?}) is above dns_max_ttl ({:?})",
                    g.dns_min_ttl, g.dns_max_ttl
                ),
            );
        }
    }
    g
}

/// A `resolvers` entry: `IP` (port 53) or `IP:PORT`.
fn resolver(sink: &mut Sink<'_>, v: &read::Val<'_>) -> Option<SocketAddr> {
    let s = read::string(sink, v)?;
    if let Ok(ip) = s.parse::<std::net::IpAddr>() {
        return Some(SocketAddr::new(ip, defaults::DNS_PORT));
    }
    read::addr_value(sink, v, Use::Endpoint)
}

fn admin(sink: &mut Sink<'_>, t: &Fields<'_, '_>) -> (Admin, Option<Span>) {
    t.check_keys(sink, ADMIN_KEYS);
    let mut a = Admin::default();
    let mut at = None;
    if let Some(addr) = t.addr(sink, "listen", Use::Bind) {
        a.listen = addr;
        at = t.get("listen").map(|v| v.span());
    }
    if let Some(v) = t.get("token_file") {
        match read::string(sink, v) {
            Some("") => sink.error(
                v.span(),
                "token_file is empty; give a path or remove the key",
            ),
            Some(p) => a.token_file = Some(PathBuf::from(p)),
            None => {}
        }
    }
    // The admin API changes the running config: reachable from other hosts, it must ask for
    // a token.
    if !crate::addr::is_loopback(a.listen.ip()) && a.token_file.is_none() {
        if let Some(v) = t.get("listen") {
            sink.error(
                v.span(),
                format!(
                    "admin.listen {} is reachable from other hosts; set admin.token_file (a bearer token for the admin API) or listen on loopback",
                    a.listen
                ),
            );
        }
    }
    (a, at)
}

pub(crate) fn listener(
    sink: &mut Sink<'_>,
    name: &str,
    t: &Fields<'_, '_>,
) -> (Listener, ListenerAt) {
    t.check_keys(sink, LISTENER_KEYS);
    let protocol = t
        .choice(sink, "protocol", PROTOCOLS)
        .unwrap_or(Protocol::Http);
    let mut l = Listener::new(NO_ADDR, protocol);
    let mut at = ListenerAt {
        bind: None,
        pool: None,
        tls: ListenerTlsAt::default(),
        sni_routing: None,
        filters: Vec::new(),
    };

    if let Some(v) = t.require(
        sink,
        "bind",
        &format!("listener `{name}`"),
        "\"127.0.0.1:8080\"",
    ) {
        if let Some(addr) = read::addr_value(sink, v, Use::Bind) {
            l.bind = addr;
            at.bind = Some(v.span());
        }
    }
    match t.get("pool") {
        Some(v) => {
            if let Some(p) = read::string(sink, v) {
                l.pool = Some(p.to_string());
                at.pool = Some(v.span());
            }
        }
        None if protocol == Protocol::Tcp && !sni_routing(t) => sink.error(
            t.span.clone(),
            format!("tcp listener `{name}` has no `pool`; a tcp listener forwards every connection to one pool, add e.g. pool = \"db\""),
        ),
        None => {}
    }
    if let Some(d) = t.duration(sink, "header_timeout", true) {
        l.header_timeout = d;
    }
    if let Some(d) = t.duration(sink, "idle_timeout", true) {
        l.idle_timeout = d;
    }
    if let Some(d) = t.duration(sink, "upgrade_idle_timeout", true) {
        l.upgrade_idle_timeout = d;
    }
    if let Some(n) = t.int(sink, "max_header_bytes", defaults::MAX_HEADER_BYTES_RANGE) {
        l.max_header_bytes = n;
    }
    if let Some(v) = t.get("access_log") {
        if let Some(s) = read::string(sink, v) {
            match s {
                "" => sink.error(v.span(), "access_log must be \"stdout\" or a file path"),
                "stdout" => l.access_log = Some(AccessLog::Stdout),
                path => l.access_log = Some(AccessLog::File(PathBuf::from(path))),
            }
        }
    }
    if let Some(v) = t.get("sni_routing") {
        match v.get_ref().as_bool() {
            Some(true) if protocol == Protocol::Http => sink.error(
                v.span(),
                "sni_routing is for tcp listeners (an http listener routes by `host` after decrypting)",
            ),
            Some(b) => {
                l.sni_routing = b;
                at.sni_routing = b.then(|| v.span());
            }
            None => read::wrong_type(sink, v, "a boolean"),
        }
    }
    if let Some(v) = t.get("tls") {
        at.tls.table = t.key_span("tls");
        if let Some(tt) = read::table(sink, v) {
            l.tls = tls::listener(sink, name, &tt, &mut at.tls);
        }
        if let (Some(span), true) = (&at.sni_routing, l.tls.is_some()) {
            sink.error(
                span.clone(),
                "sni_routing passes TLS through without decrypting; it cannot be combined with [tls] termination on the same listener",
            );
        }
    }
    client_addr::listener(sink, t, &mut l);
    crate::listener_path::listener(sink, t, &mut l);
    (l.filters, at.filters) = filter_names(sink, t);
    if protocol == Protocol::Tcp {
        // Harmless but a sign of a copy-paste or a misunderstanding. With sni_routing,
        // header_timeout bounds the wait for the ClientHello (and with proxy_protocol,
        // for the PROXY header).
        for key in ["header_timeout", "max_header_bytes", "access_log"] {
            if key == "header_timeout" && (l.sni_routing || l.proxy_protocol) {
                continue;
            }
            if let Some(span) = t.key_span(key) {
                sink.warn(span, format!("{key} has no effect on a tcp listener"));
            }
        }
    }
    (l, at)
}

pub(crate) fn route(
    sink: &mut Sink<'_>,
    name: &str,
    name_span: Span,
    t: &Fields<'_, '_>,
) -> (Route, RouteAt) {
    t.check_keys(sink, ROUTE_KEYS);
    let what = format!("route `{name}`");
    let mut r = Route {
        listener: String::new(),
        host: None,
        path_prefix: defaults::PATH_PREFIX.to_string(),
        pool: String::new(),
        sni: None,
        https_redirect: false,
        https_port: 443,
        hsts: None,
        filters: Vec::new(),
    };
    let mut at = RouteAt {
        name: name_span,
        listener: None,
        pool: None,
        host: None,
        sni: None,
        https_redirect: None,
        hsts: None,
        filters: Vec::new(),
        matcher_ok: true,
        path_prefix: None,
    };

    if let Some(v) = t.require(sink, "listener", &what, "\"web\"") {
        if let Some(s) = read::string(sink, v) {
            r.listener = s.to_string();
            at.listener = Some(v.span());
        }
    }
    if let Some(v) = t.require(sink, "pool", &what, "\"app\"") {
        if let Some(s) = read::string(sink, v) {
            r.pool = s.to_string();
            at.pool = Some(v.span());
        }
    }
    if let Some(v) = t.get("host") {
        match read::string(sink, v).map(host::parse) {
            Some(Ok(h)) => {
                r.host = Some(h);
                at.host = Some(v.span());
            }
            Some(Err(e)) => {
                sink.error(v.span(), e);
                at.matcher_ok = false;
            }
            None => at.matcher_ok = false,
        }
    }
    if let Some(v) = t.get("path_prefix") {
        match read::string(sink, v) {
            Some(p) => match check_path(p) {
                Ok(()) => {
                    r.path_prefix = p.to_string();
                    at.path_prefix = Some(v.span());
                }
                Err(e) => {
                    sink.error(v.span(), format!("invalid path_prefix \"{p}\": {e}"));
                    at.matcher_ok = false;
                }
            },
            None => at.matcher_ok = false,
        }
    }
    if let Some(v) = t.get("sni") {
        match tls::sni(sink, v) {
            Some(h) => {
                r.sni = Some(h);
                at.sni = Some(v.span());
            }
            None => at.matcher_ok = false,
        }
    }
    if let Some(v) = t.get("https_redirect") {
        match v.get_ref().as_bool() {
            Some(b) => {
                r.https_redirect = b;
                at.https_redirect = b.then(|| v.span());
            }
            None => read::wrong_type(sink, v, "a boolean"),
        }
    }
    if let Some(port) = t.int(sink, "https_port", 1..=65535) {
        r.https_port = port;
        if !r.https_redirect {
            if let Some(span) = t.key_span("https_port") {
                sink.warn(
                    span,
                    "https_port has no effect without https_redirect = true",
                );
            }
        }
    }
    if let Some(v) = t.get("hsts") {
        if let Some(s) = read::string(sink, v) {
            match check_hsts(s) {
                Ok(()) => {
                    r.hsts = Some(s.to_string());
                    at.hsts = Some(v.span());
                }
                Err(e) => sink.error(v.span(), e),
            }
        }
    }
    (r.filters, at.filters) = filter_names(sink, t);
    (r, at)
}

/// `filters = ["a", "b"]`: the names and where each is written (checked in `filter_check.rs`).
fn filter_names(sink: &mut Sink<'_>, t: &Fields<'_, '_>) -> (Vec<String>, Vec<Span>) {
    let mut out = (Vec::new(), Vec::new());
    if let Some(items) = t.get("filters").and_then(|v| read::array(sink, v)) {
        for item in items.iter() {
            if let Some(s) = read::string(sink, item) {
                out.0.push(s.to_string());
                out.1.push(item.span());
            }
        }
    }
    out
}

/// A `Strict-Transport-Security` value: `max-age=N` first (RFC 6797), then
/// `includeSubDomains` / `preload`.
fn check_hsts(s: &str) -> Result<(), String> {
    let mut parts = s.split(';').map(str::trim);
    let age = parts.next().unwrap_or("");
    let ok = age
        .strip_prefix("max-age=")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && n.len() <= 10);
    if !ok {
        return Err(format!(
            "invalid hsts {s:?}: it must start with max-age=SECONDS, as in \"max-age=31536000; includeSubDomains\""
        ));
    }
    for p in parts {
        if !p.eq_ignore_ascii_case("includesubdomains") && !p.eq_ignore_ascii_case("preload") {
            return Err(format!(
                "invalid hsts {s:?}: unknown directive {p:?} (expected includeSubDomains or preload)"
            ));
        }
    }
    Ok(())
}

pub(crate) fn pool(sink: &mut Sink<'_>, name: &str, t: &Fields<'_, '_>) -> (Pool, PoolAt) {
    t.check_keys(sink, POOL_KEYS);
    let mut p = Pool::default();
    let mut at = PoolAt {
        max_queue: None,
        health_interval: None,
        health_timeout: None,
        health: None,
        health_check: None,
        per_try_timeout: None,
        response_timeout_ok: true,
        tls: PoolTlsAt::default(),
        named: Vec::new(),
    };

    if let Some(b) = t.choice(sink, "balance", BALANCES) {
        p.balance = b;
    }
    if let Some(v) = t.get("endpoints") {
        for e in endpoints(sink, name, v) {
            match e {
                Listed::Addr(e) => p.endpoints.push(e),
                Listed::Named(e, span) => {
                    p.named.push(e);
                    at.named.push(span);
                }
            }
        }
    }
    if let Some(n) = t.int(sink, "max_conn", defaults::LIMIT_RANGE) {
        p.max_conn = n;
    }
    if let Some(n) = t.int(sink, "max_conn_total", defaults::LIMIT_RANGE) {
        p.max_conn_total = n;
    }
    if let Some(n) = t.int(sink, "max_queue", defaults::LIMIT_RANGE) {
        p.max_queue = n;
        at.max_queue = t.get("max_queue").map(|v| v.span());
    }
    if let Some(d) = t.duration(sink, "queue_timeout", true) {
        p.queue_timeout = d;
    }
    if let Some(v) = t.get("overflow_status") {
        match read::integer_value(v.get_ref()) {
            Some(n @ (429 | 503)) => p.overflow_status = n as u16,
            Some(n) => sink.error(
                v.span(),
                format!("overflow_status must be 429 or 503, found {n}"),
            ),
            None => read::wrong_type(sink, v, "an integer (429 or 503)"),
        }
    }
    for (key, slot) in [
        ("connect_timeout", &mut p.connect_timeout),
        ("response_timeout", &mut p.response_timeout),
        ("idle_timeout", &mut p.idle_timeout),
    ] {
        match t.duration(sink, key, true) {
            Some(d) => *slot = d,
            None if key == "response_timeout" && t.get(key).is_some() => {
                at.response_timeout_ok = false;
            }
            None => {}
        }
    }
    if let Some(d) = t.duration(sink, "request_timeout", true) {
        p.request_timeout = Some(d);
    }
    balancing(sink, t, &mut p);
    if let Some(d) = t.duration(sink, "slow_start", false) {
        p.slow_start = d;
    }
    if let Some(d) = t.duration(sink, "max_conn_age", true) {
        p.max_conn_age = Some(d);
    }
    if let Some(n) = t.int(
        sink,
        "max_requests_per_conn",
        defaults::MAX_REQUESTS_PER_CONN_RANGE,
    ) {
        p.max_requests_per_conn = n;
    }
    if let Some(v) = t.get("health") {
        at.health = t.key_span("health");
        if let Some(h) = read::table(sink, v) {
            p.health = health(sink, &h, &mut at);
        }
    }
    if let Some(v) = t.get("retry") {
        if let Some(r) = read::table(sink, v) {
            p.retry = retry(sink, &r, &mut at);
        }
    }
    if let Some(v) = t.get("tls") {
        if let Some(tt) = read::table(sink, v) {
            p.tls = Some(tls::pool(sink, name, &tt, &mut at.tls));
        }
    }
    upstream_protocol(sink, name, t, &mut p, &at);
    if let Some(v) = t.choice(sink, "send_proxy", client_addr::SEND_PROXY) {
        p.send_proxy = Some(v);
    }
    (p, at)
}

/// `protocol` and `max_streams_per_conn`, checked against the pool's `tls` and its
/// health check (parsed before).
fn upstream_protocol(
    sink: &mut Sink<'_>,
    name: &str,
    t: &Fields<'_, '_>,
    p: &mut Pool,
    at: &PoolAt,
) {
    if let Some(v) = t.choice(sink, "protocol", UPSTREAM_PROTOCOLS) {
        p.protocol = v;
        let span = t.get("protocol").map(|v| v.span()).unwrap_or_default();
        match (v, p.tls.is_some()) {
            (UpstreamProtocol::H2, false) => sink.error(
                span,
                format!("protocol = \"h2\" is HTTP/2 over TLS: add [pools.{name}.tls], or use \"h2c\" for cleartext HTTP/2"),
            ),
            (UpstreamProtocol::H2c, true) => sink.error(
                span,
                format!("protocol = \"h2c\" is cleartext HTTP/2, but [pools.{name}.tls] connects over TLS: use \"h2\""),
            ),
            _ => {}
        }
    }
    if let Some(n) = t.int(
        sink,
        "max_streams_per_conn",
        defaults::MAX_STREAMS_PER_CONN_RANGE,
    ) {
        p.max_streams_per_conn = n;
        if !p.protocol.is_h2() {
            if let Some(span) = t.key_span("max_streams_per_conn") {
                sink.warn(span, "max_streams_per_conn has no effect unless protocol is \"h2c\" or \"h2\" (HTTP/1.1 carries one request per connection)");
            }
        }
    }
    h2_ping(sink, t, p);
    // An h2 pool whose `alpn` list leaves out `h2`: an endpoint that picks from the list
    // fails every connect. (An http1 pool's list may serve tcp listeners: not judged.)
    let offered = p.tls.as_ref().and_then(|t| t.alpn.as_ref());
    if let (true, Some(list), Some(span)) = (p.protocol.is_h2(), offered, at.tls.alpn.clone()) {
        if !list.iter().any(|a| a == "h2") {
            sink.warn(
                span,
                "this pool speaks HTTP/2 (protocol = \"h2\") but its tls alpn does not offer \"h2\": an endpoint that picks one of these fails every connect",
            );
        }
    }
    if p.health.check == HealthCheck::Grpc && !p.protocol.is_h2() {
        let span = at.health_check.clone().unwrap_or_default();
        sink.error(
            span,
            format!("check = \"grpc\" speaks HTTP/2: set protocol = \"h2c\" (or \"h2\" with TLS) on pool {name}"),
        );
    }
}

/// `ping_interval` and `ping_timeout`: HTTP/2's PING, which HTTP/1.1 has no equivalent of.
fn h2_ping(sink: &mut Sink<'_>, t: &Fields<'_, '_>, p: &mut Pool) {
    p.ping_interval = t.duration(sink, "ping_interval", true);
    if let Some(d) = t.duration(sink, "ping_timeout", true) {
        p.ping_timeout = d;
    }
    for key in ["ping_interval", "ping_timeout"] {
        let Some(span) = t.key_span(key) else {
            continue;
        };
        if !p.protocol.is_h2() {
            sink.warn(
                span,
                format!(
                    "{key} has no effect unless protocol is \"h2c\" or \"h2\" (PING is HTTP/2's)"
                ),
            );
        } else if key == "ping_timeout" && p.ping_interval.is_none() {
            sink.warn(
                span,
                "ping_timeout has no effect without ping_interval (no PING is sent)",
            );
        }
    }
}

/// Whether a listener table says `sni_routing = true` (then `pool` is optional).
fn sni_routing(t: &Fields<'_, '_>) -> bool {
    t.get("sni_routing")
        .and_then(|v| v.get_ref().as_bool())
        .unwrap_or(false)
}

/// The keys that tune `hash` and `sticky`.
fn balancing(sink: &mut Sink<'_>, t: &Fields<'_, '_>, p: &mut Pool) {
    if let Some(v) = t.get("hash_key") {
        if let Some(s) = read::string(sink, v) {
            match parse_hash_key(s) {
                Ok(k) => p.hash_key = k,
                Err(msg) => sink.error(v.span(), msg),
            }
        }
    }
    if let Some(v) = t.get("hash_balance_factor") {
        let n = match v.get_ref() {
            DeValue::Float(f) => f.as_str().replace('_', "").parse::<f64>().ok(),
            DeValue::Integer(_) => read::integer_value(v.get_ref()).map(|i| i as f64),
            _ => None,
        };
        match n {
            Some(f) if f == 0.0 || (1.0..=100.0).contains(&f) => p.hash_balance_factor = f,
            Some(f) => sink.error(
                v.span(),
                format!("hash_balance_factor = {f} is out of range; use 0 (unbounded) or a number from 1.0 to 100"),
            ),
            None => read::wrong_type(sink, v, "a number (e.g. 1.25)"),
        }
    }
    if let Some(v) = t.get("sticky_cookie") {
        if let Some(s) = read::string(sink, v) {
            let token = !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if token {
                p.sticky.cookie = s.to_string();
            } else {
                sink.error(
                    v.span(),
                    format!("invalid cookie name {s:?}: use letters, digits and -_."),
                );
            }
        }
    }
    if let Some(b) = t.choice(sink, "sticky_base", BALANCES) {
        if b == Balance::Sticky {
            let span = t.get("sticky_base").map(|v| v.span()).unwrap_or_default();
            sink.error(span, "sticky_base must be another algorithm than sticky");
        } else {
            p.sticky.base = b;
        }
    }
    if let Some(v) = t.get("sticky_secret") {
        if let Some(s) = read::string(sink, v) {
            if s.len() < 16 {
                sink.error(v.span(), "sticky_secret must be at least 16 characters");
            } else {
                p.sticky.secret = Some(s.to_string());
            }
        }
    }
}

/// `client_ip`, `path`, `header:NAME`, `cookie:NAME`.
fn parse_hash_key(s: &str) -> Result<HashKey, String> {
    let bad_name = |n: &str| {
        n.is_empty()
            || !n
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    };
    match s.split_once(':') {
        None if s == "client_ip" => Ok(HashKey::ClientIp),
        None if s == "path" => Ok(HashKey::Path),
        Some(("header", n)) if !bad_name(n) => Ok(HashKey::Header(n.to_ascii_lowercase())),
        Some(("cookie", n)) if !bad_name(n) => Ok(HashKey::Cookie(n.to_string())),
        _ => Err(format!(
            "invalid hash_key {s:?} (expected client_ip, path, header:NAME or cookie:NAME)"
        )),
    }
}

/// An entry of a pool's `endpoints`: an address, or a DNS name that an endpoint source
/// follows (with the span of the name, for `weir check`'s warning when it does not resolve).
pub(crate) enum Listed {
    Addr(Endpoint),
    Named(NamedEndpoint, Span),
}

pub(crate) fn endpoints(sink: &mut Sink<'_>, pool: &str, v: &read::Val<'_>) -> Vec<Listed> {
    let Some(items) = read::array(sink, v) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    // addr or name → where it was first listed, for the duplicate message.
    let mut seen: HashMap<String, usize> = HashMap::new();
    for item in items.iter() {
        let DeValue::Table(map) = item.get_ref() else {
            let hint = item
                .get_ref()
                .as_str()
                .map_or(String::new(), |s| format!("; write {{ addr = \"{s}\" }}"));
            sink.error(
                item.span(),
                format!("expected an endpoint table like {{ addr = \"127.0.0.1:9001\" }}, found {}{hint}", read::a_type(item.get_ref())),
            );
            continue;
        };
        let t = Fields {
            map,
            span: item.span(),
        };
        t.check_keys(sink, ENDPOINT_KEYS);
        let weight = t
            .int(sink, "weight", defaults::WEIGHT_RANGE)
            .unwrap_or(defaults::WEIGHT);
        let (v, entry) = match (t.get("addr"), t.get("srv")) {
            (Some(_), Some(srv)) => {
                sink.error(
                    srv.span(),
                    "an endpoint has `addr` or `srv`, not both (SRV records give the ports)",
                );
                continue;
            }
            (None, Some(v)) => {
                if let Some(w) = t.get("weight") {
                    sink.error(
                        w.span(),
                        "an `srv` endpoint takes its weights from its SRV records; remove `weight`",
                    );
                    continue;
                }
                let Some(s) = read::string(sink, v) else {
                    continue;
                };
                match dns_name::srv(s) {
                    Ok(name) => (v, named(DnsName::Srv(name), weight, v)),
                    Err(e) => {
                        sink.error(v.span(), e);
                        continue;
                    }
                }
            }
            _ => {
                let Some(v) = t.require(sink, "addr", "endpoint", "\"127.0.0.1:9001\"") else {
                    continue;
                };
                let Some(entry) = endpoint_addr(sink, v, weight) else {
                    continue;
                };
                (v, entry)
            }
        };
        let key = match &entry {
            Listed::Addr(e) => e.addr.to_string(),
            Listed::Named(e, _) => e.name.to_string(),
        };
        if let Some(&first) = seen.get(&key) {
            let line = sink.line_of(first);
            sink.error(
                v.span(),
                format!(
                    "duplicate endpoint {key} in pool `{pool}` (already listed on line {line})"
                ),
            );
            continue;
        }
        seen.insert(key, v.span().start);
        out.push(entry);
    }
    out
}

/// `addr`: `IP:PORT`, else `HOST:PORT`; an error says why it is neither.
fn endpoint_addr(sink: &mut Sink<'_>, v: &read::Val<'_>, weight: u32) -> Option<Listed> {
    let s = read::string(sink, v)?;
    let as_ip = crate::addr::parse(s, Use::Endpoint);
    if let Ok(addr) = as_ip {
        return Some(Listed::Addr(Endpoint { addr, weight }));
    }
    // Only a name is tried as one: an IP written wrong gets the address's message.
    let err = match dns_name::looks_named(s) {
        true => match dns_name::host_port(s) {
            Ok((host, port)) => return Some(named(DnsName::Host { host, port }, weight, v)),
            Err(e) => e,
        },
        false => as_ip.unwrap_err(),
    };
    sink.error(v.span(), err);
    None
}

fn named(name: DnsName, weight: u32, v: &read::Val<'_>) -> Listed {
    Listed::Named(NamedEndpoint { name, weight }, v.span())
}

fn health(sink: &mut Sink<'_>, t: &Fields<'_, '_>, at: &mut PoolAt) -> Health {
    t.check_keys(sink, HEALTH_KEYS);
    let mut h = Health::default();
    // The http-only keys whose values were accepted.
    let mut http_keys: Vec<&'static str> = Vec::new();
    if let Some(c) = t.choice(sink, "check", CHECKS) {
        h.check = c;
        at.health_check = t.get("check").map(|v| v.span());
    }
    if let Some(v) = t.get("path") {
        if let Some(p) = read::string(sink, v) {
            match check_path(p) {
                Ok(()) => {
                    h.path = p.to_string();
                    http_keys.push("path");
                }
                Err(e) => sink.error(v.span(), format!("invalid health path \"{p}\": {e}")),
            }
        }
    }
    if let Some(v) = t.get("expect_status") {
        match expect_status(v.get_ref()) {
            Ok(r) => {
                h.expect_status = r;
                http_keys.push("expect_status");
            }
            Err(e) => sink.error(v.span(), e),
        }
    }
    if let Some(d) = t.duration(sink, "interval", true) {
        h.interval = d;
        at.health_interval = t.get("interval").map(|v| v.span());
    }
    if let Some(d) = t.duration(sink, "timeout", true) {
        h.timeout = d;
        at.health_timeout = t.get("timeout").map(|v| v.span());
    }
    if let Some(n) = t.int(sink, "rise", defaults::RISE_FALL_RANGE) {
        h.rise = n;
    }
    if let Some(n) = t.int(sink, "fall", defaults::RISE_FALL_RANGE) {
        h.fall = n;
    }
    if let Some(v) = t.get("host") {
        if let Some(s) = read::string(sink, v) {
            let checked = host::header_value(s, "health host").map_err(|e| match s.is_empty() {
                true => format!("{e}; omit `host` to send the endpoint's address"),
                false => e,
            });
            match checked {
                Ok(()) => {
                    h.host = Some(s.to_string());
                    http_keys.push("host");
                }
                Err(e) => sink.error(v.span(), e),
            }
        }
    }
    if let Some(v) = t.get("expect_body") {
        match read::string(sink, v) {
            Some("") => sink.error(v.span(), "expect_body is empty; omit it to accept any body"),
            Some(s) => {
                h.expect_body = Some(s.to_string());
                http_keys.push("expect_body");
            }
            None => {}
        }
    }
    let mut grpc_keys: Vec<&'static str> = Vec::new();
    if let Some(v) = t.get("service") {
        if let Some(s) = read::string(sink, v) {
            match s.bytes().all(|b| b.is_ascii_graphic()) {
                true => {
                    h.service = s.to_string();
                    grpc_keys.push("service");
                }
                false => sink.error(
                    v.span(),
                    format!("invalid service {s:?}: a gRPC service name (e.g. \"package.Service\") has no spaces or control characters"),
                ),
            }
        }
    }
    if let Some(s) = t.choice(sink, "initial", INITIAL_STATES) {
        h.initial = s;
    }
    if let Some(n) = t.int(sink, "eject_after", defaults::EJECT_AFTER_RANGE) {
        h.eject_after = n;
    }
    if let Some(list) = status_list(sink, t, "eject_status") {
        h.eject_status = list;
    }
    if let Some(d) = t.duration(sink, "eject_time", true) {
        h.eject_time = d;
    }
    if let Some(n) = t.int(sink, "max_ejection_percent", defaults::PERCENT_RANGE) {
        h.max_ejection_percent = n;
    }
    if let Some(p) = t.choice(sink, "no_healthy", NO_HEALTHY) {
        h.no_healthy = p;
    }
    http_only_keys(sink, t, h.check, &http_keys, &grpc_keys);
    h
}

/// `path`, `expect_status`, `host` and `expect_body` do nothing but for an http
/// check (`host` also for grpc: the `:authority`), `service` but for a grpc one: say
/// so, unless the value or `check` is wrong (that error is the news).
fn http_only_keys(
    sink: &mut Sink<'_>,
    t: &Fields<'_, '_>,
    check: HealthCheck,
    http: &[&str],
    grpc: &[&str],
) {
    let written = match t.get("check").map(|v| v.get_ref().as_str()) {
        None => "none",
        Some(Some(s)) if CHECKS.iter().any(|(n, _)| *n == s) => s,
        Some(_) => return,
    };
    let idle = |key: &&&str| match check {
        HealthCheck::Http => false,
        HealthCheck::Grpc => **key != "host",
        _ => true,
    };
    let unused = http.iter().filter(idle).map(|k| (k, "http"));
    let unused = unused.chain(
        grpc.iter()
            .filter(|_| check != HealthCheck::Grpc)
            .map(|k| (k, "grpc")),
    );
    for (key, needs) in unused {
        let Some(span) = t.key_span(key) else {
            continue;
        };
        sink.warn(
            span,
            format!(
                "{key} has no effect unless check = \"{needs}\" (this pool has check = \"{written}\")"
            ),
        );
    }
}

/// `eject_status` / `on_status`: an array of distinct 5xx codes. `None` after
/// any error, so the default stays.
fn status_list(sink: &mut Sink<'_>, t: &Fields<'_, '_>, key: &str) -> Option<Vec<u16>> {
    code_list(sink, t, key, &HTTP_FAILURES)
}

/// What a list of codes may hold, and how its messages name them.
struct Codes {
    range: std::ops::RangeInclusive<i64>,
    /// "server errors", for "may only list server errors (500-599)".
    what: &'static str,
    /// "a status code", for "expected a status code (an integer from ...)".
    one: &'static str,
    /// "status codes like [502, 503]", for "must be an array of ...".
    example: &'static str,
}

const HTTP_FAILURES: Codes = Codes {
    range: defaults::FAILURE_STATUS_RANGE,
    what: "server errors",
    one: "a status code",
    example: "status codes like [502, 503]",
};

/// gRPC status codes other than OK (1 CANCELLED .. 16 UNAUTHENTICATED).
const GRPC_FAILURES: Codes = Codes {
    range: 1..=16,
    what: "gRPC error codes",
    one: "a gRPC status code",
    example: "gRPC status codes like [14] (UNAVAILABLE)",
};

fn code_list(
    sink: &mut Sink<'_>,
    t: &Fields<'_, '_>,
    key: &str,
    codes: &Codes,
) -> Option<Vec<u16>> {
    let v = t.get(key)?;
    let DeValue::Array(items) = v.get_ref() else {
        let hint = match read::integer_value(v.get_ref()) {
            Some(n) => format!("; write [{n}]"),
            None => String::new(),
        };
        sink.error(
            v.span(),
            format!(
                "{key} must be an array of {}, found {}{hint}",
                codes.example,
                read::a_type(v.get_ref())
            ),
        );
        return None;
    };
    let range = codes.range.clone();
    let mut out: Vec<u16> = Vec::new();
    let mut ok = true;
    for item in items.iter() {
        let n = match (item.get_ref(), read::integer_value(item.get_ref())) {
            (_, Some(n)) => n,
            // Too large for an i64: certainly not a status code.
            (DeValue::Integer(i), None) => {
                sink.error(
                    item.span(),
                    format!(
                        "{key} may only list {} ({}-{}), found {}",
                        codes.what,
                        range.start(),
                        range.end(),
                        i.as_str()
                    ),
                );
                ok = false;
                continue;
            }
            (other, None) => {
                sink.error(
                    item.span(),
                    format!(
                        "expected {} (an integer from {} to {}), found {}",
                        codes.one,
                        range.start(),
                        range.end(),
                        read::a_type(other)
                    ),
                );
                ok = false;
                continue;
            }
        };
        if !range.contains(&n) {
            sink.error(
                item.span(),
                format!(
                    "{key} may only list {} ({}-{}), found {n}",
                    codes.what,
                    range.start(),
                    range.end()
                ),
            );
            ok = false;
        } else if out.contains(&(n as u16)) {
            sink.error(item.span(), format!("{n} is listed twice in {key}"));
            ok = false;
        } else {
            out.push(n as u16);
        }
    }
    ok.then_some(out)
}

/// `200`, `"200"` or `"200-399"`, each code in 100..=599.
fn expect_status(v: &DeValue<'_>) -> Result<(u16, u16), String> {
    let usage = "expect_status must be a status code like 200 or a range like \"200-399\"";
    let code = |n: i64| -> Result<u16, String> {
        if (100..=599).contains(&n) {
            Ok(n as u16)
        } else {
            Err(format!("{n} is not an HTTP status code (100-599)"))
        }
    };
    let parse = |s: &str| {
        s.trim()
            .parse::<i64>()
            .map_err(|_| usage.to_string())
            .and_then(code)
    };
    match v {
        DeValue::Integer(_) => {
            let n = code(read::integer_value(v).unwrap_or(-1))?;
            Ok((n, n))
        }
        DeValue::String(s) => {
            let (lo, hi) = match s.split_once('-') {
                Some((a, b)) => (parse(a)?, parse(b)?),
                None => (parse(s)?, parse(s)?),
            };
            if lo > hi {
                return Err(format!(
                    "expect_status range \"{s}\" is empty ({lo} > {hi})"
                ));
            }
            Ok((lo, hi))
        }
        _ => Err(format!("{usage}, found {}", read::a_type(v))),
    }
}

fn retry(sink: &mut Sink<'_>, t: &Fields<'_, '_>, at: &mut PoolAt) -> Retry {
    t.check_keys(sink, RETRY_KEYS);
    let mut r = Retry::default();
    if let Some(n) = t.int(sink, "attempts", defaults::RETRY_ATTEMPTS_RANGE) {
        r.attempts = n;
    }
    if let Some(n) = t.int(sink, "buffer", defaults::RETRY_BUFFER_RANGE) {
        r.buffer = n;
    }
    if let Some(d) = t.duration(sink, "per_try_timeout", true) {
        r.per_try_timeout = Some(d);
        at.per_try_timeout = t.get("per_try_timeout").map(|v| v.span());
    }
    if let Some(list) = status_list(sink, t, "on_status") {
        r.on_status = list;
    }
    if let Some(list) = code_list(sink, t, "on_grpc_status", &GRPC_FAILURES) {
        r.on_grpc_status = list;
    }
    if let Some(n) = t.int(sink, "budget_percent", defaults::PERCENT_RANGE) {
        r.budget_percent = n;
    }
    if let Some(n) = t.int(
        sink,
        "budget_min_per_sec",
        defaults::RETRY_BUDGET_MIN_PER_SEC_RANGE,
    ) {
        r.budget_min_per_sec = n;
    }
    r
}
