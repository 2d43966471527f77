//! One stream's state on the server side (RFC 9113 §5.1): whether each direction has ended,
//! and its two flow-control windows.

use crate::flow::Windows;

/// A stream the client opened and that is not yet closed both ways.
#[derive(Debug)]
pub struct Stream {
    /// END_STREAM received: half-closed (remote).
    pub recv_closed: bool,
    /// END_STREAM sent: half-closed (local).
    pub send_closed: bool,
    /// A response head (a final one) has gone out.
    pub answered: bool,
    pub flow: Windows,
    /// From content-length: what the DATA must add up to.
    pub content_length: Option<u64>,
    pub received: u64,
}

impl Stream {
    pub fn new(send_window: u32, recv_window: u32, content_length: Option<u64>) -> Stream {
        Stream {
            recv_closed: false,
            send_closed: false,
            answered: false,
            flow: Windows::new(send_window, recv_window),
            content_length,
            received: 0,
        }
    }

    pub fn done(&self) -> bool {
        self.recv_closed && self.send_closed
    }
}
