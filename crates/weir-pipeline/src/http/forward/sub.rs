//! The route filters' port into the pipeline (weir-filters' `Pipeline`): a filter's own
//! request goes through the named pool of the running config with the same tries as a
//! client's.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;

use bytes::Bytes;
use http::Request;
use weir_codec::added::Added;
use weir_upstream::balance::PickKey;
use weir_upstream::upbody::Prepared;

use super::keys::pick_key;
use crate::http::conn_ctx::ConnCtx;
use crate::http::tries::{self, Attempts, Ended};
use weir_filters::port::{OnBehalfOf, Pipeline, Sent, SubRequest};

impl Pipeline for ConnCtx {
    fn send<'a>(&'a self, sub: SubRequest<'a>) -> Pin<Box<dyn Future<Output = Sent> + Send + 'a>> {
        Box::pin(async move {
            let Some(pool) = self.shared.snapshot.load().pools.get(sub.pool).cloned() else {
                return Sent::NoPool;
            };
            let (key, head, proxy_header) = match sub.on_behalf_of {
                OnBehalfOf::Client(client) => {
                    let req = Request::from_parts(sub.head, ());
                    let key = pick_key(&pool, &req, &Added::NONE, self.conn.client);
                    // The client's port only when it is the connection's peer itself.
                    let port = match client == self.conn.client.ip() {
                        true => self.conn.client.port(),
                        false => 0,
                    };
                    let from = SocketAddr::new(client, port);
                    let tlvs = self.conn.proxy_tlvs.as_deref();
                    let proxy_header = pool.send_proxy.map(|v| {
                        weir_transport::proxy_protocol::header(
                            v,
                            Some((from, self.conn.local)),
                            tlvs,
                        )
                    });
                    (key, req.into_parts().0, proxy_header)
                }
                OnBehalfOf::Weir => {
                    let proxy_header = pool
                        .send_proxy
                        .map(|v| weir_transport::proxy_protocol::header(v, None, None));
                    (PickKey::default(), sub.head, proxy_header)
                }
            };
            let ended = tries::run(Attempts {
                pool: &pool,
                key,
                parts: head,
                added: Added::NONE,
                body: Prepared::Replayable(Bytes::new()),
                deadline: Some(sub.deadline),
                proxy_header,
            })
            .await;
            match ended {
                Ended::Response { resp, .. } => Sent::Answer(resp),
                Ended::Failed { error, info, .. } => {
                    let reason = Ended::reason(&error, &info);
                    Sent::Failed(format!("{reason}: {error}"))
                }
            }
        })
    }
}
