//! `weir check`'s look at the endpoints given by name: a name that does not resolve now is
//! a warning at its line and column, never an error (weir starts with it, and the pool gains
//! its addresses once it resolves). The lookup itself is the caller's (`weir check` asks the
//! same resolver weir runs with), so this crate does no I/O on the network.

use crate::model::{DnsName, Global};
use crate::read::Sink;
use crate::walk::Walked;

/// Says why a name does not resolve now (`None`: it does), with the config's resolvers.
pub type NameLookup<'a> = &'a dyn Fn(&Global, &DnsName) -> Option<String>;

pub(crate) fn check(sink: &mut Sink<'_>, walked: &Walked, lookup: NameLookup<'_>) {
    for (name, at) in &walked.pools {
        let Some(pool) = walked.config.pools.get(name) else {
            continue;
        };
        for (e, span) in pool.named.iter().zip(&at.named) {
            if let Some(why) = lookup(&walked.config.global, &e.name) {
                sink.warn(
                    span.clone(),
                    format!(
                        "`{}` does not resolve now ({why}); pool `{name}` has no endpoint from it until it does",
                        e.name
                    ),
                );
            }
        }
    }
}
