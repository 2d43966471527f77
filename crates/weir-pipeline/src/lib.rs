//! One request or session, from the listener's accepted connection to the answer:
//!
//! - `http/`: a client connection (`conn.rs`, on weir-codec's server sides), one request's
//!   way (`forward/`: host, route, filters, rewrite, balancing keys, tries), the tries over
//!   weir-upstream's sessions (`tries.rs`), upgrades (`upgrade.rs`) and the sticky cookie;
//!   it implements the route filters' port (`forward/sub.rs`);
//! - `tcp/`: a TCP session (`session.rs`), routed by SNI when the listener asks
//!   (`sni.rs`, counted in `passthrough.rs`);
//! - `router.rs`: a listener's routes and what each leads to (pool, filters, counters);
//! - `snapshot.rs`: the running config as the pipeline reads it, swapped whole by a change;
//! - `race.rs`: a busy future raced against its rarely firing watchers in one task.

pub mod http;
pub mod race;
pub mod router;
pub mod snapshot;
pub mod tcp;
