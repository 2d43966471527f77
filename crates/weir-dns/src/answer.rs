//! One resolution of a name: its addresses as endpoints now and until when the answer holds
//! (the records' smallest TTL), or why there is none. A `HOST:PORT` name is every A and AAAA
//! record of the host; an SRV name is its records of the most preferred priority (RFC 2782:
//! lower first), each target's addresses at the record's port and weight.

use std::time::{Duration, Instant};

use hickory_resolver::net::NetError;
use hickory_resolver::TokioResolver;
use weir_config::{DnsName, Endpoint, Global, NamedEndpoint};

/// A name's endpoints now.
#[derive(Debug)]
pub(crate) struct Answer {
    pub endpoints: Vec<Endpoint>,
    /// When the shortest-lived record of the answer runs out.
    pub valid_until: Instant,
}

/// Why a resolution gave no endpoints (the last good answer keeps serving).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The name exists in no form the server has (NXDOMAIN), or has no such records.
    Empty,
    Timeout,
    Failed(String),
}

impl Failure {
    /// The `result` label of `weir_dns_resolutions_total`.
    pub fn result(&self) -> &'static str {
        match self {
            Failure::Empty => "empty",
            Failure::Timeout => "timeout",
            Failure::Failed(_) => "failed",
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Empty => f.write_str("no address records"),
            Failure::Timeout => f.write_str("no answer from the DNS server in time"),
            Failure::Failed(why) => f.write_str(why),
        }
    }
}

fn failure(e: NetError) -> Failure {
    match e {
        _ if e.is_no_records_found() || e.is_nx_domain() => Failure::Empty,
        NetError::Timeout => Failure::Timeout,
        e => Failure::Failed(e.to_string()),
    }
}

pub(crate) async fn resolve(r: &TokioResolver, named: &NamedEndpoint) -> Result<Answer, Failure> {
    let answer = match &named.name {
        DnsName::Host { host, port } => host_addrs(r, host, *port, named.weight).await?,
        DnsName::Srv(name) => srv(r, name).await?,
    };
    match answer.endpoints.is_empty() {
        true => Err(Failure::Empty),
        false => Ok(answer),
    }
}

async fn host_addrs(
    r: &TokioResolver,
    host: &str,
    port: u16,
    weight: u32,
) -> Result<Answer, Failure> {
    let found = r.lookup_ip(host).await.map_err(failure)?;
    let endpoints = found
        .iter()
        .map(|ip| Endpoint {
            addr: (ip, port).into(),
            weight,
        })
        .collect();
    Ok(Answer {
        endpoints,
        valid_until: found.valid_until(),
    })
}

async fn srv(r: &TokioResolver, name: &str) -> Result<Answer, Failure> {
    let found = r.srv_lookup(name).await.map_err(failure)?;
    let records: Vec<_> = found
        .answers()
        .iter()
        .filter_map(|rec| match &rec.data {
            hickory_resolver::proto::rr::RData::SRV(s) => Some(s.clone()),
            _ => None,
        })
        .collect();
    let Some(best) = records.iter().map(|s| s.priority).min() else {
        return Err(Failure::Empty);
    };
    let mut out = Answer {
        endpoints: Vec::new(),
        valid_until: found.valid_until(),
    };
    for s in records.iter().filter(|s| s.priority == best) {
        // Weight 0 is "rarely, when nothing else": the least weir gives (the config's 1).
        let weight = u32::from(s.weight).max(1);
        // A target that does not resolve now leaves the others serving.
        if let Ok(a) = host_addrs(r, &s.target.to_string(), s.port, weight).await {
            out.valid_until = out.valid_until.min(a.valid_until);
            out.endpoints.extend(a.endpoints);
        }
    }
    Ok(out)
}

/// For `weir check`: whether `name` resolves now with the resolvers `global` names, and if not
/// why. Blocks for at most a few seconds per name.
pub fn lookup_now(global: &Global, name: &DnsName) -> Option<String> {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return Some(format!("cannot start a resolver: {e}")),
    };
    rt.block_on(async {
        let r = match crate::resolver::build(&global.resolvers) {
            Ok(r) => r,
            Err(e) => return Some(format!("cannot read the resolver configuration: {e}")),
        };
        let named = NamedEndpoint {
            name: name.clone(),
            weight: 1,
        };
        let limit = Duration::from_secs(10);
        match tokio::time::timeout(limit, resolve(&r, &named)).await {
            Ok(Ok(_)) => None,
            Ok(Err(f)) => Some(f.to_string()),
            Err(_) => Some(Failure::Timeout.to_string()),
        }
    })
}
