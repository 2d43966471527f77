//! A send that failed, as the session seam reports it: the try's error, and the payload
//! back when none of it went out. Below the sessions and the protocols' error mapping
//! (`h1.rs`, `h2.rs`), which both make it.

use std::time::Duration;

use crate::error::TryError;
use crate::upbody::UpBody;
use weir_codec::send::Payload;

/// A send that failed: what the tries need to know, and, when not a byte
/// went out (the connection was already dead), the payload back so the
/// request can go out on another session.
pub struct SendFailed {
    pub error: TryError,
    pub unsent: Option<Payload<UpBody>>,
    /// Whether any byte of an answer had arrived.
    pub answered: bool,
    /// For a request that went out unanswered: how long the backend had been
    /// silent when it went, by the kernel's clock (HTTP/1.1 over plain TCP).
    pub silent_for: Option<Duration>,
}
