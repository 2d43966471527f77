//! The upstream side of the pipeline, whatever the protocol: sessions
//! (`session.rs`, the seam; `h1.rs`, its HTTP/1.1 implementation), the
//! response body that owns a session (`body.rs`), one try's exchange
//! (`exchange.rs`: checkout or connect, send; streams come from `transport`), and each endpoint's idle
//! store (`idle.rs`, `keep_alive.rs`); `upbody.rs` is the request body as
//! it goes upstream (replayable when small).

mod body;
mod exchange;
mod h1;
mod h2;
pub mod idle;
pub mod keep_alive;
mod session;
pub mod upbody;

pub use body::{RecvBody, Upgraded};
pub use exchange::{exchange, Exchange, Exchanged};
pub use session::{Dial, SendFailed, Session};
