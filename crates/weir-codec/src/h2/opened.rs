//! A stream an exchange opened on an upstream HTTP/2 connection, which forgets it when
//! dropped (shared by the exchange, its response body and its request pump).

use weir_h2::frame::StreamId;

use super::client::{H2ClientShared, Stream};

/// A stream opened on the connection: its slot there, removed (and the stream reset, if
/// it is still open either way) when the exchange is over or dropped.
pub(super) struct Opened {
    pub stream: Stream,
    pub id: StreamId,
    /// The slot is removed and the stream reset already (the answer was taken whole, under
    /// the lock its body took anyway): dropping takes no lock.
    pub done: bool,
}

impl Opened {
    pub fn conn(&self) -> &H2ClientShared {
        &self.stream.conn.conn
    }
}

impl Drop for Opened {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let waker = {
            let mut st = self.conn().lock();
            st.forget(self.id);
            st.output_waker()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}
