//! The response body read from an upstream session, whatever its protocol:
//! it owns the session until the body ends, then hands it back if the
//! exchange left it reusable.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};

use crate::custom::CustomBody;
use crate::error::ExchangeError;
use crate::session::Session;
use crate::upbody::UpBody;
use weir_codec::h1::client;
use weir_codec::h2::exchange as h2x;
use weir_transport::UpstreamStream;

/// An upstream connection that switched protocols (`101`): its stream, and
/// the new protocol's bytes that arrived with the response head.
pub struct Upgraded {
    pub stream: UpstreamStream,
    pub rest: BytesMut,
}

pub enum UpstreamResponseBody {
    H1(client::H1ResponseBody<UpBody>),
    /// It holds its stream's claim on the shared connection: nothing to give back.
    H2(h2x::H2ResponseBody<UpBody>),
    /// A custom protocol's (`custom.rs`).
    Custom(Box<dyn CustomBody>),
}

impl From<client::H1ResponseBody<UpBody>> for UpstreamResponseBody {
    #[inline]
    fn from(b: client::H1ResponseBody<UpBody>) -> Self {
        UpstreamResponseBody::H1(b)
    }
}

impl From<h2x::H2ResponseBody<UpBody>> for UpstreamResponseBody {
    #[inline]
    fn from(b: h2x::H2ResponseBody<UpBody>) -> Self {
        UpstreamResponseBody::H2(b)
    }
}

impl UpstreamResponseBody {
    /// The session, if the exchange ended cleanly and it can carry another
    /// request.
    pub fn take_reusable(&mut self) -> Option<Session> {
        match self {
            UpstreamResponseBody::H1(b) => b.take_reusable().map(Session::H1),
            // The stream's claim ends when the body is dropped; the connection stays
            // shared in the idle store.
            UpstreamResponseBody::H2(_) => None,
            UpstreamResponseBody::Custom(b) => b.take_reusable().map(Session::Custom),
        }
    }

    /// Whether the response switched the connection to the protocol the
    /// request asked for.
    pub fn is_upgraded(&self) -> bool {
        match self {
            UpstreamResponseBody::H1(b) => b.is_upgraded(),
            UpstreamResponseBody::H2(_) | UpstreamResponseBody::Custom(_) => false,
        }
    }

    /// The switched connection, for a relay.
    pub fn take_upgraded(&mut self) -> Option<Upgraded> {
        match self {
            UpstreamResponseBody::H1(b) => b.take_upgraded().map(|c| {
                let (stream, rest) = c.into_stream();
                Upgraded { stream, rest }
            }),
            UpstreamResponseBody::H2(_) | UpstreamResponseBody::Custom(_) => None,
        }
    }
}

impl Body for UpstreamResponseBody {
    type Data = Bytes;
    type Error = ExchangeError;

    #[inline]
    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, ExchangeError>>> {
        match self.get_mut() {
            UpstreamResponseBody::H1(b) => match Pin::new(b).poll_frame(cx) {
                Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(ExchangeError::H1(e)))),
                Poll::Ready(Some(Ok(f))) => Poll::Ready(Some(Ok(f))),
                Poll::Ready(None) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            },
            UpstreamResponseBody::H2(b) => match Pin::new(b).poll_frame(cx) {
                Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(ExchangeError::H2(e)))),
                Poll::Ready(Some(Ok(f))) => Poll::Ready(Some(Ok(f))),
                Poll::Ready(None) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            },
            UpstreamResponseBody::Custom(b) => match Pin::new(&mut **b).poll_frame(cx) {
                Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(ExchangeError::Custom(e)))),
                Poll::Ready(Some(Ok(f))) => Poll::Ready(Some(Ok(f))),
                Poll::Ready(None) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    #[inline]
    fn is_end_stream(&self) -> bool {
        match self {
            UpstreamResponseBody::H1(b) => b.is_end_stream(),
            UpstreamResponseBody::H2(b) => b.is_end_stream(),
            UpstreamResponseBody::Custom(b) => b.is_end_stream(),
        }
    }

    #[inline]
    fn size_hint(&self) -> SizeHint {
        match self {
            UpstreamResponseBody::H1(b) => b.size_hint(),
            UpstreamResponseBody::H2(b) => b.size_hint(),
            UpstreamResponseBody::Custom(b) => b.size_hint(),
        }
    }
}
