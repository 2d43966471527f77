//! A request's route filters around its upstream exchange (steps 3 and 7 of `forward`).
//!
//! `Filtered` holds the chain and what its filters share (weir-filters' `Cx`), boxed: the
//! request's future carries one pointer across the exchange, whether the route has filters or
//! not, and the exchange itself is awaited in the same place for both (an earlier shape wrapped
//! the whole exchange in a boxed future of its own, 8.7 KB allocated and copied per filtered
//! request).

use std::time::Instant;

use http::{Request, Response};

use super::accounting::Accounting;
use super::route::Routed;
use crate::http::conn_ctx::ConnCtx;
use weir_codec::client_body::ClientBody;
use weir_filters::{Chain, Cx, Later, Phase};
use weir_http::body::ProxyBody;
use weir_metrics::reason::Reason;

pub struct Filtered<'a> {
    chain: Chain,
    cx: Cx<'a>,
}

/// An answer a request-phase filter made, with the reason it is counted under.
pub type Answer = (Box<Response<ProxyBody>>, Reason);

impl<'a> Filtered<'a> {
    /// The route's chain, when it has one.
    pub fn start(
        ctx: &'a ConnCtx,
        req: &Request<ClientBody>,
        routed: &Routed,
        acct: &Accounting,
        grpc: bool,
        start: Instant,
    ) -> Option<Box<Filtered<'a>>> {
        let filters = &routed.target.filters;
        if filters.is_empty() {
            return None;
        }
        let client = acct.client.unwrap_or(ctx.conn.client).ip();
        let reads = filters.reads();
        Some(Box::new(Filtered {
            chain: filters.clone(),
            cx: Cx::new(
                &ctx.conn,
                ctx,
                client,
                req,
                routed.host.as_ref(),
                reads,
                grpc,
                start,
            ),
        }))
    }

    /// The request phases: an answer of one of them, or `None` when the request goes on (with
    /// the Host a rewrite chose, in `routed`). Only a filter that waits on I/O makes a future
    /// of its own, boxed.
    pub async fn request(
        &mut self,
        req: &mut Request<ClientBody>,
        routed: &mut Routed,
    ) -> Option<Answer> {
        let answer = match weir_filters::request(&self.chain, &mut self.cx, req) {
            Phase::Passed => None,
            Phase::Answered(resp, reason) => Some((resp, reason)),
            Phase::Waiting => {
                Box::pin(weir_filters::request_waiting(
                    &self.chain,
                    &mut self.cx,
                    req,
                ))
                .await
            }
        };
        if answer.is_none() {
            routed.upstream_host = self
                .cx
                .upstream_host
                .take()
                .filter(|h| Some(h) != routed.host.as_ref());
        }
        answer
    }

    /// The response phases of the filters whose request phase ran, then what they decided
    /// that the access log shows.
    pub async fn response(
        mut self: Box<Self>,
        resp: &mut Response<ProxyBody>,
        acct: &mut Accounting,
    ) {
        let s = &mut *self;
        if weir_filters::response(&s.chain, &mut s.cx, resp) == Later::Wait {
            Box::pin(weir_filters::response_waiting(&s.chain, &mut s.cx, resp)).await;
        }
        if let Some(id) = &s.cx.request_id {
            acct.request_id(id);
        }
        if let Some(user) = &s.cx.user {
            acct.user(user);
        }
    }
}
