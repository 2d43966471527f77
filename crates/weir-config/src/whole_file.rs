//! What a whole config file is held to beyond its parts (`weir check`, `weir run -c`, a
//! reload; not the store's settings or an API body): a file with nothing in it is refused,
//! as `nginx -t` refuses one without its required blocks (it is more often a wrong or
//! truncated file than a wish to serve nothing), and one without listeners is told that
//! it accepts no connections.

use toml::de::DeTable;

use crate::read::Sink;
use crate::walk::Walked;

pub(crate) fn check(sink: &mut Sink<'_>, doc: &DeTable<'_>, walked: &Walked) {
    if sink.errors() > 0 {
        return;
    }
    if doc.is_empty() {
        sink.error(
            0..0,
            "the file is empty: a config needs at least a listener and the pool it sends to \
             ([listeners.NAME] with `bind` and `pool`, [pools.NAME] with `endpoints`); start \
             from examples/basic.toml, and find every key in docs/CONFIG.md",
        );
    } else if walked.listeners.is_empty() {
        sink.warn(
            0..0,
            "no listeners: weir accepts no connections with this file (add a \
             [listeners.NAME] with `bind` and `pool`, as in examples/basic.toml)",
        );
    }
}
