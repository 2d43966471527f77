//! Every default in one place, so `docs/CONFIG.md`, the parser and other
//! crates (e.g. the admin API building a resource) agree.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use crate::model::Balance;

pub const DRAIN_GRACE: Duration = Duration::from_secs(30);
/// Bounds on how long a DNS answer is kept before it is asked again.
pub const DNS_MIN_TTL: Duration = Duration::from_secs(1);
pub const DNS_MAX_TTL: Duration = Duration::from_secs(300);
/// The port of a `resolvers` entry written without one.
pub const DNS_PORT: u16 = 53;
pub const ADMIN_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 9901);

pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
pub const HTTP_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
pub const TCP_IDLE_TIMEOUT: Duration = Duration::from_secs(3600);
/// An upgraded HTTP connection (WebSocket) silent both ways this long is closed.
pub const UPGRADE_IDLE_TIMEOUT: Duration = Duration::from_secs(3600);
pub const MAX_HEADER_BYTES: usize = 64 * 1024;
/// A TLS handshake must finish this long after accept.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// `weir check` warns about a certificate that expires sooner than this.
pub const EXPIRY_WARNING: Duration = Duration::from_secs(14 * 24 * 3600);
/// The floor is hyper's smallest read buffer.
pub const MAX_HEADER_BYTES_RANGE: std::ops::RangeInclusive<i64> = 8192..=1024 * 1024;

pub const PATH_PREFIX: &str = "/";

pub const BALANCE: Balance = Balance::RoundRobin;
pub const WEIGHT: u32 = 1;
pub const WEIGHT_RANGE: std::ops::RangeInclusive<i64> = 1..=1000;
pub const MAX_CONN: u32 = 0;
pub const MAX_QUEUE: u32 = 0;
/// Upper bound for `max_conn` and `max_queue`; beyond it the value is a typo.
pub const LIMIT_RANGE: std::ops::RangeInclusive<i64> = 0..=1_000_000;
pub const QUEUE_TIMEOUT: Duration = Duration::from_secs(5);
pub const OVERFLOW_STATUS: u16 = 503;
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(60);
pub const UPSTREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(4);

pub const HEALTH_PATH: &str = "/healthz";
pub const EXPECT_STATUS: (u16, u16) = (200, 399);
pub const HEALTH_INTERVAL: Duration = Duration::from_secs(1);
pub const HEALTH_TIMEOUT: Duration = Duration::from_millis(500);
pub const RISE: u32 = 2;
pub const FALL: u32 = 2;
pub const RISE_FALL_RANGE: std::ops::RangeInclusive<i64> = 1..=100;

pub const RETRY_ATTEMPTS: u32 = 2;
pub const RETRY_ATTEMPTS_RANGE: std::ops::RangeInclusive<i64> = 0..=10;

impl Default for crate::model::Global {
    fn default() -> Self {
        crate::model::Global {
            drain_grace: DRAIN_GRACE,
            resolvers: Vec::new(),
            dns_min_ttl: DNS_MIN_TTL,
            dns_max_ttl: DNS_MAX_TTL,
        }
    }
}

impl Default for crate::model::Admin {
    fn default() -> Self {
        crate::model::Admin {
            listen: ADMIN_LISTEN,
            token_file: None,
        }
    }
}

pub const EJECT_AFTER: u32 = 5;
pub const EJECT_TIME: Duration = Duration::from_secs(10);
pub const MAX_EJECTION_PERCENT: u32 = 50;
pub const RETRY_BUFFER: usize = 64 * 1024;
pub const RETRY_BUDGET_PERCENT: u32 = 20;
pub const RETRY_BUDGET_MIN_PER_SEC: u32 = 3;
pub const EJECT_AFTER_RANGE: std::ops::RangeInclusive<i64> = 0..=1000;
/// `max_ejection_percent` and `budget_percent`.
pub const PERCENT_RANGE: std::ops::RangeInclusive<i64> = 0..=100;
/// Statuses `eject_status` and `on_status` may list: server errors only.
pub const FAILURE_STATUS_RANGE: std::ops::RangeInclusive<i64> = 500..=599;
pub const RETRY_BUFFER_RANGE: std::ops::RangeInclusive<i64> = 0..=16 * 1024 * 1024;
pub const RETRY_BUDGET_MIN_PER_SEC_RANGE: std::ops::RangeInclusive<i64> = 0..=1000;
/// `max_streams_per_conn`: streams open at once on one HTTP/2 upstream connection.
pub const MAX_STREAMS_PER_CONN: u32 = 100;
pub const MAX_STREAMS_PER_CONN_RANGE: std::ops::RangeInclusive<i64> = 1..=1000;
/// `ping_timeout`: how long an HTTP/2 upstream connection may stay silent after a PING.
pub const PING_TIMEOUT: Duration = Duration::from_secs(10);
/// `max_requests_per_conn`; 0 = no cap.
pub const MAX_REQUESTS_PER_CONN_RANGE: std::ops::RangeInclusive<i64> = 0..=1_000_000;

impl Default for crate::model::Health {
    fn default() -> Self {
        crate::model::Health {
            check: crate::model::HealthCheck::None,
            path: HEALTH_PATH.to_string(),
            expect_status: EXPECT_STATUS,
            interval: HEALTH_INTERVAL,
            timeout: HEALTH_TIMEOUT,
            rise: RISE,
            fall: FALL,
            host: None,
            expect_body: None,
            service: String::new(),
            initial: crate::model::InitialState::Healthy,
            eject_after: EJECT_AFTER,
            eject_status: Vec::new(),
            eject_time: EJECT_TIME,
            max_ejection_percent: MAX_EJECTION_PERCENT,
            no_healthy: crate::model::NoHealthy::FailOpen,
        }
    }
}

impl Default for crate::model::Retry {
    fn default() -> Self {
        crate::model::Retry {
            attempts: RETRY_ATTEMPTS,
            buffer: RETRY_BUFFER,
            per_try_timeout: None,
            on_status: Vec::new(),
            on_grpc_status: Vec::new(),
            budget_percent: RETRY_BUDGET_PERCENT,
            budget_min_per_sec: RETRY_BUDGET_MIN_PER_SEC,
        }
    }
}

/// Bounded-load consistent hashing: at most 1.25× the fair share per endpoint.
pub const HASH_BALANCE_FACTOR: f64 = 1.25;
pub const STICKY_COOKIE: &str = "weir_sticky";

impl Default for crate::model::Pool {
    /// A pool with no endpoints and every default; endpoints are added after.
    fn default() -> Self {
        crate::model::Pool {
            balance: BALANCE,
            endpoints: Vec::new(),
            named: Vec::new(),
            max_conn: MAX_CONN,
            max_conn_total: 0,
            max_queue: MAX_QUEUE,
            queue_timeout: QUEUE_TIMEOUT,
            overflow_status: OVERFLOW_STATUS,
            connect_timeout: CONNECT_TIMEOUT,
            response_timeout: RESPONSE_TIMEOUT,
            request_timeout: None,
            idle_timeout: UPSTREAM_IDLE_TIMEOUT,
            health: crate::model::Health::default(),
            retry: crate::model::Retry::default(),
            hash_key: crate::model::HashKey::ClientIp,
            hash_balance_factor: HASH_BALANCE_FACTOR,
            sticky: crate::model::Sticky {
                cookie: STICKY_COOKIE.to_string(),
                base: crate::model::Balance::RoundRobin,
                secret: None,
            },
            slow_start: Duration::ZERO,
            max_conn_age: None,
            max_requests_per_conn: 0,
            tls: None,
            protocol: crate::model::UpstreamProtocol::Http1,
            max_streams_per_conn: MAX_STREAMS_PER_CONN,
            ping_interval: None,
            ping_timeout: PING_TIMEOUT,
            send_proxy: None,
        }
    }
}

impl crate::model::Listener {
    /// A listener on `bind` with every default for `protocol`.
    pub fn new(bind: SocketAddr, protocol: crate::model::Protocol) -> Self {
        crate::model::Listener {
            bind,
            protocol,
            pool: None,
            header_timeout: HEADER_TIMEOUT,
            idle_timeout: match protocol {
                crate::model::Protocol::Http => HTTP_IDLE_TIMEOUT,
                crate::model::Protocol::Tcp => TCP_IDLE_TIMEOUT,
            },
            upgrade_idle_timeout: UPGRADE_IDLE_TIMEOUT,
            max_header_bytes: MAX_HEADER_BYTES,
            access_log: None,
            tls: None,
            sni_routing: false,
            trusted_proxies: Vec::new(),
            proxy_protocol: false,
            filters: Vec::new(),
            path: crate::path::PathRules::default(),
        }
    }
}

impl Default for crate::model::Config {
    /// No listeners, routes or pools; `[global]` and `[admin]` defaults.
    fn default() -> Self {
        crate::model::Config {
            global: crate::model::Global::default(),
            admin: crate::model::Admin::default(),
            listeners: Default::default(),
            routes: Default::default(),
            pools: Default::default(),
            certificates: Default::default(),
            filters: Default::default(),
        }
    }
}
