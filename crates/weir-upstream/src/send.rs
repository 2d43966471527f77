//! Sending one request on a session, whatever its protocol: the response head back, its
//! body owning the session (`body.rs`), or a failed send told in the tries' terms
//! (`h1.rs`, `h2.rs`, a custom protocol's own). Apart from `session.rs`, which the body
//! and the protocols' error mapping need without the send.

use http::request::Parts;
use http::uri::Scheme;
use http::Response;

use crate::body::UpstreamResponseBody;
use crate::custom::Outgoing;
use crate::send_failed::SendFailed;
use crate::session::Session;
use crate::upbody::UpBody;
use crate::{h1, h2};
use weir_codec::added::Added;
use weir_codec::h1::client;
use weir_codec::h2::exchange as h2x;
use weir_codec::send::{HeadTimer, Payload};

impl Session {
    /// Sends the request and waits for the response head (see
    /// [`HeadTimer`]); the body that comes back owns the session.
    pub async fn send(
        self,
        parts: &Parts,
        added: &Added<'_>,
        payload: Payload<UpBody>,
        timer: HeadTimer,
        reused: bool,
    ) -> Result<Response<UpstreamResponseBody>, SendFailed> {
        match self {
            Session::H1(c) => client::send_into(c, parts, added, payload, timer)
                .await
                .map_err(|e| h1::failed(e, timer.limit, reused)),
            Session::H2(s) => {
                let scheme = match s.conn.tls {
                    0 => Scheme::HTTP,
                    _ => Scheme::HTTPS,
                };
                h2x::send_into(s, parts, added, payload, timer, &scheme)
                    .await
                    .map_err(|e| h2::failed(e, timer.limit, reused))
            }
            Session::Custom(s) => {
                let req = Outgoing {
                    parts,
                    added,
                    payload,
                    timer,
                    reused,
                };
                s.send(req)
                    .await
                    .map(|r| r.map(UpstreamResponseBody::Custom))
            }
        }
    }
}
