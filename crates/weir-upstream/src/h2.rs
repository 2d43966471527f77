//! The HTTP/2 session's failures (`codec::h2::exchange`) told as a [`TryError`].

use std::time::Duration;

use crate::error::{Cause, Delivery, ExchangeError, Side, TryError};
use crate::send_failed::SendFailed;
use crate::upbody::UpBody;
use weir_codec::client_body::ClientBodyError;
use weir_codec::h2::exchange::{Error, SendError};
use weir_metrics::reason::Reason;

/// `limit`: the try's wait for the head, for a timeout's log line.
#[cold]
pub(super) fn failed(e: SendError<UpBody>, limit: Duration, reused: bool) -> SendFailed {
    let SendError { error, unsent } = e;
    // Unprocessed by the endpoint's word (REFUSED_STREAM, beyond a GOAWAY's last stream),
    // or never sent: any method may go again. Anything else on an opened stream may have
    // been acted on.
    let delivery = match unsent.is_some() || error.refused_unprocessed() {
        true => Delivery::NotDelivered,
        false => Delivery::MaybeDelivered,
    };
    let (reason, side, delivery) = match &error {
        Error::Timeout => (
            Reason::UpstreamTimeout,
            Side::Upstream,
            Delivery::MaybeDelivered,
        ),
        Error::Body(b) => {
            let reason = b
                .downcast_ref::<ClientBodyError>()
                .map_or(Reason::ClientClosed, ClientBodyError::reason);
            (reason, Side::Client, delivery)
        }
        Error::Request(_) => (Reason::BadRequest, Side::Client, Delivery::NotDelivered),
        Error::Reset(_)
        | Error::Malformed(_)
        | Error::Refused
        | Error::Connection(_)
        | Error::Unsent(_) => (Reason::UpstreamReset, Side::Upstream, delivery),
    };
    let cause = match error {
        Error::Timeout => Cause::Timeout {
            limit,
            ran_out: None,
        },
        e => Cause::Exchange(ExchangeError::H2(e)),
    };
    SendFailed {
        error: TryError {
            reason,
            side,
            delivery,
            reused,
            cause,
        },
        answered: false,
        unsent,
        silent_for: None,
    }
}
