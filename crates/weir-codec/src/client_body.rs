//! The request body as the pipeline sees it, whatever the client's
//! protocol: each codec's server body is one variant, so the pipeline
//! (`forward`, `upbody`, the tries) never names a codec.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use crate::h1::server;
use crate::h2;
use weir_metrics::reason::Reason;

#[derive(Default)]
pub enum ClientBody {
    H1(server::ReqBody),
    H2(h2::request_body::RequestBody),
    /// No body: an HTTP/2 extended CONNECT's request, whose stream is the tunnel.
    #[default]
    Empty,
    /// A body a route's `body_limit` counts as it streams (one without a length that fits).
    Limited(Box<Limited>),
}

/// A body and how many more bytes it may carry.
pub struct Limited {
    inner: ClientBody,
    left: u64,
    limit: u64,
}

impl ClientBody {
    /// This body, failing with `TooLarge` once it carries more than `limit` bytes.
    pub fn limited(self, limit: u64) -> ClientBody {
        ClientBody::Limited(Box::new(Limited {
            inner: self,
            left: limit,
            limit,
        }))
    }
}

impl From<h2::request_body::RequestBody> for ClientBody {
    #[inline]
    fn from(b: h2::request_body::RequestBody) -> Self {
        ClientBody::H2(b)
    }
}

impl From<server::ReqBody> for ClientBody {
    #[inline]
    fn from(b: server::ReqBody) -> Self {
        ClientBody::H1(b)
    }
}

/// Why the client's body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ClientBodyError {
    #[error(transparent)]
    H1(#[from] server::BodyError),
    #[error(transparent)]
    H2(#[from] h2::shared::StreamGone),
    #[error("the request body is larger than the route's body_limit of {0} bytes")]
    TooLarge(u64),
}

impl ClientBodyError {
    /// The client sent something invalid (400), rather than going away.
    pub fn is_malformed(&self) -> bool {
        match self {
            ClientBodyError::H1(e) => e.is_malformed(),
            // A reset from the client is it going away; a protocol error, its mistake.
            ClientBodyError::H2(e) => e.is_malformed(),
            ClientBodyError::TooLarge(_) => false,
        }
    }

    /// Why the request fails for this: the client sent something invalid (400), more than
    /// the route takes (413), or went away.
    pub fn reason(&self) -> Reason {
        match self {
            ClientBodyError::TooLarge(_) => Reason::BodyTooLarge,
            e if e.is_malformed() => Reason::BadRequest,
            _ => Reason::ClientClosed,
        }
    }
}

impl Body for ClientBody {
    type Data = Bytes;
    type Error = ClientBodyError;

    #[inline]
    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, ClientBodyError>>> {
        match self.get_mut() {
            ClientBody::H1(b) => Pin::new(b)
                .poll_frame(cx)
                .map(|f| f.map(|r| r.map_err(ClientBodyError::H1))),
            ClientBody::H2(b) => Pin::new(b)
                .poll_frame(cx)
                .map(|f| f.map(|r| r.map_err(ClientBodyError::H2))),
            ClientBody::Empty => Poll::Ready(None),
            ClientBody::Limited(l) => {
                let polled = Pin::new(&mut l.inner).poll_frame(cx);
                if let Poll::Ready(Some(Ok(f))) = &polled {
                    let n = f.data_ref().map_or(0, |d| d.len() as u64);
                    match l.left.checked_sub(n) {
                        Some(left) => l.left = left,
                        None => return Poll::Ready(Some(Err(ClientBodyError::TooLarge(l.limit)))),
                    }
                }
                polled
            }
        }
    }

    #[inline]
    fn is_end_stream(&self) -> bool {
        match self {
            ClientBody::H1(b) => b.is_end_stream(),
            ClientBody::H2(b) => b.is_end_stream(),
            ClientBody::Empty => true,
            ClientBody::Limited(l) => l.inner.is_end_stream(),
        }
    }

    #[inline]
    fn size_hint(&self) -> SizeHint {
        match self {
            ClientBody::H1(b) => b.size_hint(),
            ClientBody::H2(b) => b.size_hint(),
            ClientBody::Empty => SizeHint::with_exact(0),
            ClientBody::Limited(l) => l.inner.size_hint(),
        }
    }
}
