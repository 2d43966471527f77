//! The request body as the pipeline sees it, whatever the client's
//! protocol: each codec's server body is one variant, so the pipeline
//! (`forward`, `upbody`, the tries) never names a codec.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use crate::codec::h1::server;
use crate::codec::h2;

#[derive(Default)]
pub enum ClientBody {
    H1(server::ReqBody),
    H2(h2::body::StreamBody),
    /// No body: an HTTP/2 extended CONNECT's request, whose stream is the tunnel.
    #[default]
    Empty,
}

impl From<h2::body::StreamBody> for ClientBody {
    #[inline]
    fn from(b: h2::body::StreamBody) -> Self {
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
    #[error("HTTP/2 stream: {0}")]
    H2(#[from] ::h2::Error),
}

impl ClientBodyError {
    /// The client sent something invalid (400), rather than going away.
    pub fn is_malformed(&self) -> bool {
        match self {
            ClientBodyError::H1(e) => e.is_malformed(),
            // A reset from the client is it going away; a protocol error, its mistake.
            ClientBodyError::H2(e) => e.reason() == Some(::h2::Reason::PROTOCOL_ERROR),
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
        }
    }

    #[inline]
    fn is_end_stream(&self) -> bool {
        match self {
            ClientBody::H1(b) => b.is_end_stream(),
            ClientBody::H2(b) => b.is_end_stream(),
            ClientBody::Empty => true,
        }
    }

    #[inline]
    fn size_hint(&self) -> SizeHint {
        match self {
            ClientBody::H1(b) => b.size_hint(),
            ClientBody::H2(b) => b.size_hint(),
            ClientBody::Empty => SizeHint::with_exact(0),
        }
    }
}
