//! The resolver weir asks: the `[global] resolvers` when listed (and only they: not
//! `/etc/hosts`), else the system's configuration (`/etc/resolv.conf`, `/etc/hosts`), as read
//! when the resolver is built (when a name is first followed, and again after the DNS settings
//! change). Its cache is off: each follower keeps its answer for as long as the TTL (bounded
//! by `dns_min_ttl`/`dns_max_ttl`) says, then asks the server again, so a cache would only
//! hide a change.

use std::net::SocketAddr;
use std::time::Duration;

use hickory_resolver::config::{ConnectionConfig, NameServerConfig, ResolveHosts, ResolverConfig};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::net::NetError;
use hickory_resolver::TokioResolver;

/// How long one query waits for a server, and how many tries a lookup makes.
const TIMEOUT: Duration = Duration::from_secs(2);
const ATTEMPTS: usize = 2;

pub(crate) fn build(servers: &[SocketAddr]) -> Result<TokioResolver, NetError> {
    let mut builder = match servers.is_empty() {
        true => TokioResolver::builder_tokio()?,
        false => {
            let listed = servers
                .iter()
                .map(|s| {
                    let mut udp = ConnectionConfig::udp();
                    udp.port = s.port();
                    let mut tcp = ConnectionConfig::tcp();
                    tcp.port = s.port();
                    NameServerConfig::new(s.ip(), true, vec![udp, tcp])
                })
                .collect();
            TokioResolver::builder_with_config(
                ResolverConfig::from_name_servers(listed),
                TokioRuntimeProvider::default(),
            )
        }
    };
    let opts = builder.options_mut();
    if !servers.is_empty() {
        opts.use_hosts_file = ResolveHosts::Never;
    }
    opts.cache_size = 0;
    opts.timeout = TIMEOUT;
    opts.attempts = ATTEMPTS;
    builder.build()
}
