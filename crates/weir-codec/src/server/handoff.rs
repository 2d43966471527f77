//! A client connection as one owner hands it to the next: from the protocol selection to the
//! codec it chose (with the first bytes it looked at), and from the HTTP/1.1 codec to a
//! protocol switched to by a `101` (with what the client sent behind the request head).

use bytes::BytesMut;

use weir_transport::{ClientReader, ClientStream, ClientWriter};

pub struct Handoff {
    pub reader: ClientReader,
    /// Bytes read from `reader` and not yet consumed: they come before anything read next.
    pub read: BytesMut,
    pub writer: ClientWriter,
}

impl Handoff {
    /// A stream nothing was read from yet.
    pub fn new(stream: ClientStream) -> Handoff {
        let (reader, writer) = stream.into_split();
        Handoff {
            reader,
            read: BytesMut::new(),
            writer,
        }
    }
}
