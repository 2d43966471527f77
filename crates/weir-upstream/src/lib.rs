//! Everything about reaching endpoints, whatever the protocol.
//!
//! - Sessions: `session.rs` is the seam (`h1.rs` and `h2.rs` its HTTP/1.1 and HTTP/2
//!   implementations over weir-codec's client sides, `custom.rs` the open variant for any
//!   other protocol), `kind.rs` what a pool speaks and how its sessions are reused
//!   (pooled or multiplexed), `carrier.rs` a multiplexed protocol's shared connection,
//!   `body.rs` the response body that owns a session, `exchange.rs` one try's exchange
//!   (checkout or connect, send; streams come from weir-transport), `upbody.rs` the request
//!   body as it goes upstream (replayable when small), `error.rs` what a failed try says (`TryError`: the facts retries decide on).
//! - Each endpoint's idle store (`idle.rs`, `keep_alive.rs`) and state (`endpoint.rs`).
//! - A pool (`pool.rs`): its endpoints, balancing (`balance/`), capacity (max_conn and the
//!   queue, `capacity/`), health checks and ejection (`health/`), and its retry budget
//!   (`retry.rs`); what each endpoint and pool counts (`metrics/`).

pub mod balance;
mod body;
pub mod capacity;
mod carrier;
pub mod custom;
pub mod endpoint;
pub mod error;
mod exchange;
mod h1;
mod h2;
pub mod health;
pub mod idle;
pub mod keep_alive;
pub mod kind;
pub mod metrics;
pub mod pool;
pub mod retry;
mod send;
mod send_failed;
mod session;
pub mod upbody;

pub use body::{Upgraded, UpstreamResponseBody};
pub use carrier::Carrier;
pub use exchange::{exchange, Exchange, Exchanged};
pub use kind::{Dial, Opener, Opening, Reuse, SessionKind};
pub use send_failed::SendFailed;
pub use session::Session;
