//! The HTTP/1.1 session: weir's own client (`codec::h1::client`) behind the
//! session seam, and its failures told as a [`TryError`].

use http::request::Parts;
use http::Response;

use super::body::{ExchangeError, RecvBody};
use super::session::SendFailed;
use crate::codec::h1::client::{self, Connection, Error};
use crate::codec::send::{HeadTimer, Payload};
use crate::error::{Cause, Delivery, Side, TryError};
use crate::http::upbody::UpBody;
use crate::reason::Reason;

pub(super) async fn send(
    conn: Connection,
    parts: &Parts,
    payload: Payload<UpBody>,
    timer: HeadTimer,
    reused: bool,
) -> Result<Response<RecvBody>, SendFailed> {
    match client::send(conn, parts, payload, timer).await {
        Ok(resp) => Ok(resp.map(RecvBody::H1)),
        Err(e) => {
            let delivery = match e.may_have_been_processed() {
                true => Delivery::MaybeDelivered,
                false => Delivery::NotDelivered,
            };
            let client::SendError {
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
                        limit: timer.limit,
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
            Err(SendFailed {
                error,
                unsent,
                answered,
            })
        }
    }
}
