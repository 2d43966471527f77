//! The HTTP/1.1 session's failures (weir's own client, `codec::h1::client`)
//! told as a [`TryError`].

use std::time::Duration;

use crate::error::{Cause, Delivery, ExchangeError, Side, TryError};
use crate::send_failed::SendFailed;
use crate::upbody::UpBody;
use weir_codec::client_body::ClientBodyError;
use weir_codec::h1::client::{Error, SendError};
use weir_metrics::reason::Reason;

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
        silent_for,
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
                ran_out: None,
            },
        },
        // The request body broke on the client's side while it streamed upstream: said the
        // way a body read before sending is (weir-pipeline's `http/forward/mod.rs`), 400 when its framing
        // broke, 499 when it stopped short.
        Error::Body(_) | Error::BodyLength(_) => TryError {
            reason: client_reason(&error),
            side: Side::Client,
            delivery,
            reused,
            cause: Cause::Exchange(ExchangeError::H1(error)),
        },
        // A TLS backend refusing weir's client certificate after a TLS 1.3 handshake: the
        // handshake failed, and the request was never read (it cannot have been: the
        // backend stopped at the certificate).
        Error::Io(ref io) if !reused && !answered && weir_transport::handshake_refused(io) => {
            TryError {
                reason: Reason::ConnectFailed,
                side: Side::Upstream,
                delivery: Delivery::NotDelivered,
                reused,
                cause: Cause::Exchange(ExchangeError::H1(error)),
            }
        }
        error => TryError {
            reason: Reason::UpstreamReset,
            side: Side::Upstream,
            delivery,
            reused,
            cause: Cause::Exchange(ExchangeError::H1(error)),
        },
    };
    SendFailed {
        error,
        unsent,
        answered,
        silent_for,
    }
}

fn client_reason(error: &Error) -> Reason {
    match error {
        Error::Body(e) => e
            .downcast_ref::<ClientBodyError>()
            .map_or(Reason::ClientClosed, ClientBodyError::reason),
        // More than the Content-Length it announced.
        Error::BodyLength("exceeds") => Reason::BadRequest,
        _ => Reason::ClientClosed,
    }
}

#[cfg(test)]
mod tests {
    use std::io;

    use bytes::Bytes;

    use super::*;
    use weir_codec::send::Payload;

    fn failed_with(error: Error, unsent: bool, answered: bool) -> TryError {
        let e = SendError {
            error,
            unsent: unsent.then(|| Payload::Bytes(Bytes::new())),
            answered,
            silent_for: None,
        };
        failed(e, Duration::from_secs(1), true).error
    }

    fn reset() -> Error {
        Error::Io(io::ErrorKind::ConnectionReset.into())
    }

    /// The facts `tries.rs` decides from, for each way an h1 exchange fails.
    #[test]
    fn each_failure_says_whether_the_request_may_have_been_delivered() {
        use Delivery::*;
        let cases = [
            // Not a byte went out.
            (Error::ClosedBeforeHead, true, false, NotDelivered),
            // A reset before any answer: the request was never read.
            (reset(), false, false, NotDelivered),
            // A reset after answer bytes, a clean close: perhaps acted on.
            (reset(), false, true, MaybeDelivered),
            (Error::ClosedBeforeHead, false, false, MaybeDelivered),
            (Error::HeadTooLarge, false, true, MaybeDelivered),
            (Error::Timeout, false, false, MaybeDelivered),
        ];
        for (error, unsent, answered, want) in cases {
            let what = error.to_string();
            let e = failed_with(error, unsent, answered);
            assert_eq!(
                e.delivery, want,
                "{what}, unsent {unsent}, answered {answered}"
            );
            assert!(e.reused);
        }
    }

    #[test]
    fn reasons_and_sides() {
        let e = failed_with(Error::Timeout, false, false);
        assert_eq!(
            (e.reason, e.side),
            (Reason::UpstreamTimeout, Side::Upstream)
        );
        assert_eq!(
            e.to_string(),
            "no response within 1s of the request's last byte"
        );
        let e = failed_with(reset(), false, false);
        assert_eq!((e.reason, e.side), (Reason::UpstreamReset, Side::Upstream));
        // The client's body: short is a client gone, too long is a bad request.
        let e = failed_with(Error::BodyLength("falls short of"), false, false);
        assert_eq!((e.reason, e.side), (Reason::ClientClosed, Side::Client));
        let e = failed_with(Error::BodyLength("exceeds"), false, false);
        assert_eq!((e.reason, e.side), (Reason::BadRequest, Side::Client));
    }
}
