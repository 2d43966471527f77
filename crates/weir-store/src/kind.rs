//! The resource kinds of the admin API (docs/DESIGN.md §3).

use std::fmt;

/// What a resource is. Endpoints are named `"POOL/ADDR"`, so one pool's endpoints sort together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Listener,
    Route,
    Pool,
    Endpoint,
    /// A certificate and key (PEM) attached to a TLS listener.
    Certificate,
    /// A named route filter (`[filters.NAME]`).
    Filter,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Listener,
        Kind::Route,
        Kind::Pool,
        Kind::Endpoint,
        Kind::Certificate,
        Kind::Filter,
    ];

    /// The name stored on disk. Spelled out rather than a discriminant so that reordering the
    /// enum can never reinterpret an existing database.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Listener => "listener",
            Kind::Route => "route",
            Kind::Pool => "pool",
            Kind::Endpoint => "endpoint",
            Kind::Certificate => "certificate",
            Kind::Filter => "filter",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The store name of endpoint `addr` of `pool`.
pub fn endpoint_name(pool: &str, addr: &str) -> String {
    format!("{pool}/{addr}")
}

/// The admin API's path of a resource, without `/api/v1/` and unencoded:
/// `pools/app/endpoints/10.0.0.1:80` for the endpoint named `app/10.0.0.1:80`.
pub fn resource_path(kind: Kind, name: &str) -> String {
    match kind {
        Kind::Listener => format!("listeners/{name}"),
        Kind::Route => format!("routes/{name}"),
        Kind::Pool => format!("pools/{name}"),
        Kind::Certificate => format!("certificates/{name}"),
        Kind::Filter => format!("filters/{name}"),
        Kind::Endpoint => {
            let (pool, addr) = name.split_once('/').unwrap_or((name, ""));
            format!("pools/{pool}/endpoints/{addr}")
        }
    }
}
