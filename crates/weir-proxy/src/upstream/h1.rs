//! The HTTP/1.1 session's failures (weir's own client, `codec::h1::client`)
//! told as a [`TryError`].

use std::time::Duration;

use super::body::ExchangeError;
use super::session::SendFailed;
use crate::codec::h1::client::{Error, SendError};
use crate::error::{Cause, Delivery, Side, TryError};
use crate::http::upbody::UpBody;
use crate::reason::Reason;

/// `limit`: the try's wait for the head, for a timeout's log line.
#[cold]
pub(super) fn failed(e: SendError<UpBody>, limit: Duration, reused: bool) -> SendFailed {
    let delivery = match e.may_have_been_processed() {
        true => Delivery::MaybeDelivered,
        false => Delivery::NotDelivered,
    };
    let SendError {
        error,
        unsent,
        answered,
    } = e;
    let error = match error {
        // Whatever went out may be acted on: a timeout proves nothing.
        Error::Timeout => TryError {
            reason: Reason::UpstreamTimeout,
            side: Side::Upstream,
            delivery: Delivery::MaybeDelivered,
            reused,
            cause: Cause::Timeout {
                limit,
                request_timeout: None,
            },
        },
        error => TryError {
            reason: Reason::UpstreamReset,
            side: match error {
                Error::Body(_) | Error::BodyLength(_) => Side::Client,
                _ => Side::Upstream,
            },
            delivery,
            reused,
            cause: Cause::Exchange(ExchangeError::H1(error)),
        },
    };
    SendFailed {
        error,
        unsent,
        answered,
    }
}
