//! The validated configuration model. Every value here has passed validation:
//! references resolve, addresses parse, durations are in range. The data plane
//! consumes these types directly and never re-checks them.

pub use crate::host_match::HostMatch;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// A whole, validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub global: Global,
    pub admin: Admin,
    pub listeners: BTreeMap<String, Listener>,
    pub routes: BTreeMap<String, Route>,
    pub pools: BTreeMap<String, Pool>,
    /// `[certificates.NAME]`: certificates in the config itself, attached to TLS listeners.
    pub certificates: BTreeMap<String, CertificateResource>,
    /// `[filters.NAME]`: steps that routes chain by name (`filters = [...]`).
    pub filters: BTreeMap<String, crate::filter::Filter>,
}

/// `[global]`: process-wide settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Global {
    /// How long in-flight requests and sessions may take to finish on
    /// shutdown or when their listener is removed. Default 30 s.
    pub drain_grace: Duration,
    /// DNS servers that resolve endpoints given by name; empty = the system's
    /// (`/etc/resolv.conf`, `/etc/hosts`).
    pub resolvers: Vec<SocketAddr>,
    /// A name's answer is asked again after its TTL, but never sooner than this. Default 1 s.
    pub dns_min_ttl: Duration,
    /// ... and never later than this. Default 5 min.
    pub dns_max_ttl: Duration,
}

/// `[admin]`: where the admin API, metrics and dashboard listen.
#[derive(Debug, Clone, PartialEq)]
pub struct Admin {
    /// Default `127.0.0.1:9901`.
    pub listen: SocketAddr,
    pub token_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    Http,
    Tcp,
}

/// `[listeners.NAME]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Listener {
    pub bind: SocketAddr,
    pub protocol: Protocol,
    /// Default pool when no route matches (http); the pool (tcp, required).
    pub pool: Option<String>,
    /// Time allowed for a client to send a complete request head (http), or its
    /// ClientHello (tcp with `sni_routing`). Default 10 s.
    pub header_timeout: Duration,
    /// http: keep-alive idle time between requests, default 60 s.
    /// tcp: a session with no bytes either way for this long is closed, default 1 h.
    pub idle_timeout: Duration,
    /// http: an upgraded connection (WebSocket) with no bytes either way for this
    /// long is closed. Default 1 h.
    pub upgrade_idle_timeout: Duration,
    /// Largest accepted request head in bytes; larger gets 431. Default 64 KiB. (http)
    pub max_header_bytes: usize,
    /// Where to write one JSON line per request; `None` = no access log. (http)
    pub access_log: Option<AccessLog>,
    /// `[listeners.NAME.tls]`: terminate TLS (http and tcp listeners).
    pub tls: Option<ListenerTls>,
    /// tcp: route each connection by its ClientHello's server name, without
    /// decrypting (routes with `sni`); `pool` takes the rest.
    pub sni_routing: bool,
    /// Peers whose `X-Forwarded-For`/`Forwarded` are believed (http), and who may send a
    /// PROXY protocol header. Empty = nobody.
    pub trusted_proxies: Vec<crate::cidr::Cidr>,
    /// Each connection starts with a PROXY protocol header (v1 or v2) from a trusted peer,
    /// whose source address becomes the client's.
    pub proxy_protocol: bool,
    /// tcp: `ip_allow` / `ip_deny` filters each connection passes before anything else
    /// (a refused one is closed and counted). http listeners take filters on routes.
    pub filters: Vec<String>,
    /// http: how request paths are put in normal form before routing (`merge_slashes`,
    /// `escaped_slashes`; dot segments are always resolved).
    pub path: crate::path::PathRules,
}

/// `[listeners.NAME.tls]`: what a TLS listener presents and accepts.
#[derive(Debug, Clone, PartialEq)]
pub struct ListenerTls {
    /// Chosen by SNI against each certificate's names, with the `[certificates.NAME]`
    /// attached to the listener (after these); at least one of the two.
    pub certificates: Vec<CertificateFiles>,
    /// Default 1.2.
    pub min_version: TlsVersion,
    /// Client certificates, verified against `client_ca`. Default none.
    pub client_auth: ClientAuth,
    pub client_ca: Option<PathBuf>,
    /// A lower-cased header that carries the verified client certificate's
    /// subject to the backend (any such header from the client is removed);
    /// `None` = not passed on. (http)
    pub client_identity_header: Option<String>,
    /// A lower-cased header that carries the verified client certificate's
    /// `x-forwarded-client-cert` element (hash, subject, URI and DNS names); the client's own
    /// is removed; `None` = not passed on. (http)
    pub client_cert_header: Option<String>,
    /// Time allowed for the handshake, from accept. Default 10 s.
    pub handshake_timeout: Duration,
}

/// `[certificates.NAME]`: a certificate chain and its key as PEM text, served by a TLS
/// listener next to its `[tls] certificates` files (an API resource, so that a certificate
/// can be added or replaced without touching the listener). Its `Debug` leaves the key out.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct CertificateResource {
    /// A listener with `[tls]`.
    pub listener: String,
    /// The chain, leaf first.
    pub cert_pem: String,
    /// The leaf's private key.
    pub key_pem: String,
    /// As a file pair's `default`: at most one per listener, across both.
    pub default: bool,
}

impl std::fmt::Debug for CertificateResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateResource")
            .field("listener", &self.listener)
            .field("default", &self.default)
            .finish_non_exhaustive()
    }
}

/// One certificate chain and its key, both PEM files (paths as written:
/// relative ones are from weir's working directory, like `access_log`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CertificateFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// Answers clients without SNI or with a name no certificate covers; with
    /// no default, those handshakes are refused (`unrecognized_name`).
    pub default: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TlsVersion {
    V12,
    V13,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientAuth {
    None,
    /// Verify a certificate when the client sends one.
    Optional,
    /// Refuse the handshake without a valid certificate.
    Required,
}

/// `[pools.NAME.tls]`: TLS to the pool's endpoints.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolTls {
    /// CA bundle that verifies endpoints; `None` = the system roots.
    pub ca: Option<PathBuf>,
    /// SNI and the name verified; `None` = the endpoint's IP address.
    pub server_name: Option<String>,
    /// A client certificate and key presented to endpoints (mTLS).
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// Offered protocols. Default `["http/1.1"]` for http, none for tcp.
    pub alpn: Option<Vec<String>>,
    /// Default 1.2.
    pub min_version: TlsVersion,
}

/// An access log's destination.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AccessLog {
    Stdout,
    /// Appended to; reopened on SIGUSR1 (for rotation).
    File(PathBuf),
}

/// `[routes.NAME]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub listener: String,
    /// `None` matches any host.
    pub host: Option<HostMatch>,
    /// Always starts with `/`. Default `/`.
    pub path_prefix: String,
    pub pool: String,
    /// tcp listeners with `sni_routing`: the ClientHello server name this
    /// route takes (exact or `*.` suffix); `host` and `path_prefix` are http only.
    pub sni: Option<HostMatch>,
    /// Answer 308 to the same URL on https instead of forwarding. (http)
    pub https_redirect: bool,
    /// The port in the redirect's URL. Default 443 (then left out of the URL).
    pub https_port: u16,
    /// `Strict-Transport-Security` value added to responses, e.g.
    /// `max-age=31536000`. (http)
    pub hsts: Option<String>,
    /// The filters a request through this route passes, in order (names of `[filters.NAME]`);
    /// their response phases run in the reverse order. (http)
    pub filters: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Balance {
    RoundRobin,
    LeastConn,
    Random,
    P2c,
    Ewma,
    Hash,
    Sticky,
}

/// `[pools.NAME]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Pool {
    pub balance: Balance,
    pub endpoints: Vec<Endpoint>,
    /// Endpoints given by a DNS name: each address the name has now is an endpoint
    /// (an endpoint source resolves them; the data plane sees only addresses).
    pub named: Vec<NamedEndpoint>,
    /// Per endpoint in-flight cap; 0 = no limit.
    pub max_conn: u32,
    /// Pool-wide in-flight cap across all endpoints; 0 = no limit.
    pub max_conn_total: u32,
    /// Requests waiting for a slot, per pool.
    pub max_queue: u32,
    /// Default 5 s.
    pub queue_timeout: Duration,
    /// 429 or 503. Default 503.
    pub overflow_status: u16,
    /// Upstream connect timeout. Default 2 s.
    pub connect_timeout: Duration,
    /// Per try: time from the last request byte sent to the response head
    /// received. Default 60 s. (http)
    pub response_timeout: Duration,
    /// Across every try of a request, from the first try's start to a
    /// response head: no client waits longer (queueing for the first try
    /// aside). None = the pool's `response_timeout`. (http)
    pub request_timeout: Option<Duration>,
    /// Pooled idle upstream connections close after this. Default 4 s;
    /// lowered per connection by the backend's `Keep-Alive: timeout=`.
    pub idle_timeout: Duration,
    pub health: Health,
    pub retry: Retry,
    /// What `balance = "hash"` hashes. Default: the client IP.
    pub hash_key: HashKey,
    /// Bounded-load factor for `hash`: no endpoint takes more than this times
    /// its fair share of in-flight requests; 0 = unbounded. Default 1.25.
    pub hash_balance_factor: f64,
    pub sticky: Sticky,
    /// A new or recovered endpoint's weight ramps from ~0 to full over this
    /// long; zero = off (default).
    pub slow_start: Duration,
    /// Upstream connections older than this are not reused; `None` = no cap.
    pub max_conn_age: Option<Duration>,
    /// Requests per upstream connection before it is retired; 0 = no cap.
    pub max_requests_per_conn: u32,
    /// `[pools.NAME.tls]`: connect to endpoints over TLS.
    pub tls: Option<PoolTls>,
    /// What weir speaks to the endpoints of an http pool. Default HTTP/1.1.
    pub protocol: UpstreamProtocol,
    /// HTTP/2 pools: streams open at once on one upstream connection (fewer if the
    /// endpoint allows fewer); beyond, another connection is opened. Default 100.
    pub max_streams_per_conn: u32,
    /// HTTP/2 pools: a connection that has read nothing from its endpoint for this long
    /// is sent a PING; `None` (the default) sends none.
    pub ping_interval: Option<Duration>,
    /// ... and is given up as dead when nothing arrives within this after the PING: its
    /// streams fail (those not yet sent are retried elsewhere). Default 10 s.
    pub ping_timeout: Duration,
    /// Write a PROXY protocol header with the client's address at the start of each
    /// upstream connection (then never shared between clients). Default none.
    pub send_proxy: Option<crate::send_proxy::SendProxy>,
}

/// `[pools.NAME] protocol`: the HTTP version weir speaks to an http pool's endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UpstreamProtocol {
    /// `http1`: HTTP/1.1, one request per connection at a time (the default).
    Http1,
    /// `h2c`: HTTP/2 in cleartext with prior knowledge (gRPC servers without TLS).
    H2c,
    /// `h2`: HTTP/2 over TLS (ALPN `h2`); needs `[pools.NAME.tls]`.
    H2,
}

impl UpstreamProtocol {
    /// Whether weir speaks HTTP/2 to the endpoints.
    pub fn is_h2(self) -> bool {
        self != UpstreamProtocol::Http1
    }
}

/// The request property that `balance = "hash"` hashes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HashKey {
    ClientIp,
    Path,
    /// Lower-cased header name.
    Header(String),
    Cookie(String),
}

/// `balance = "sticky"` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Sticky {
    /// Default `weir_sticky`.
    pub cookie: String,
    /// How requests without a valid cookie are balanced. Default round_robin.
    pub base: Balance,
    /// HMAC key signing the cookie; `None` = a random key per process, so
    /// cookies stop sticking when weir restarts.
    pub secret: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    pub addr: SocketAddr,
    /// 1..=1000. Default 1.
    pub weight: u32,
}

/// `{ addr = "api.internal:8080" }` or `{ srv = "_http._tcp.api.internal" }`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NamedEndpoint {
    pub name: DnsName,
    /// Each address's weight (1..=1000); SRV records carry their own.
    pub weight: u32,
}

/// What a named endpoint resolves.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DnsName {
    /// Every A and AAAA record of `host`, each at `port`.
    Host { host: String, port: u16 },
    /// The SRV records of a name: targets, ports and weights.
    Srv(String),
}

/// As the config writes it: `host:port`, or the SRV name (which has no port).
impl std::fmt::Display for DnsName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DnsName::Host { host, port } => write!(f, "{host}:{port}"),
            DnsName::Srv(name) => f.write_str(name),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HealthCheck {
    None,
    Tcp,
    Http,
    /// `grpc.health.v1.Health/Check` over HTTP/2 (the pool's `protocol`).
    Grpc,
}

/// `[pools.NAME.health]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Health {
    /// Default `none`.
    pub check: HealthCheck,
    /// Default `/healthz`.
    pub path: String,
    /// Inclusive range. Default 200..=399.
    pub expect_status: (u16, u16),
    /// Default 1 s.
    pub interval: Duration,
    /// Default 500 ms; must be below `interval`.
    pub timeout: Duration,
    /// Default 2.
    pub rise: u32,
    /// Default 2.
    pub fall: u32,
    /// Host header of http checks; `None` = the endpoint's address.
    pub host: Option<String>,
    /// A substring the http check's response body must contain; `None` = any body.
    pub expect_body: Option<String>,
    /// The service a grpc check asks about; "" (the default) is the server as a whole.
    pub service: String,
    /// An endpoint's state before its first check. Default healthy.
    pub initial: InitialState,
    /// Consecutive passive failures (refused or reset connections, and
    /// `eject_status` answers) that eject an endpoint; 0 = never. Default 5.
    pub eject_after: u32,
    /// Upstream statuses that count as passive failures. Default none.
    pub eject_status: Vec<u16>,
    /// How long the first ejection lasts; the n-th lasts n times as long, at
    /// most 10 times. Default 10 s.
    pub eject_time: Duration,
    /// Never eject more than this percentage of a pool's endpoints. Default 50.
    pub max_ejection_percent: u32,
    /// What to do when no endpoint is healthy. Default fail_open.
    pub no_healthy: NoHealthy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InitialState {
    Healthy,
    Unhealthy,
}

/// The pool's answer when every endpoint is unhealthy or ejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoHealthy {
    /// Use every endpoint as if healthy: a stale check must not take a
    /// whole service down.
    FailOpen,
    /// Answer 503 `no_healthy_endpoint`.
    FailClosed,
}

/// `[pools.NAME.retry]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Retry {
    /// Retries after the first try. Default 2.
    pub attempts: u32,
    /// Request bodies up to this many bytes are kept for replay; a larger
    /// body is not retried. Default 65536.
    pub buffer: usize,
    /// Time limit for each try's response head; `None` = the pool's
    /// `response_timeout`, for each try.
    pub per_try_timeout: Option<Duration>,
    /// Upstream statuses retried (idempotent requests only). Default none.
    pub on_status: Vec<u16>,
    /// gRPC statuses retried when a server answers a call with one and nothing else
    /// (a trailers-only answer), for idempotent calls only. Default none.
    pub on_grpc_status: Vec<u16>,
    /// Retries may add at most this percentage of the requests. Default 20.
    pub budget_percent: u32,
    /// ...but this many retries per second are always allowed. Default 3.
    pub budget_min_per_sec: u32,
}
