//! One stream's state on the client side (RFC 9113 §5.1): whether each direction has ended,
//! whether its response head came, and its two flow-control windows.

use crate::flow::Windows;

/// A stream weir opened and that is not yet closed both ways.
#[derive(Debug)]
pub struct Stream {
    /// END_STREAM received: half-closed (remote).
    pub recv_closed: bool,
    /// END_STREAM sent: half-closed (local).
    pub send_closed: bool,
    /// The final response head came, with its content-length (which DATA must add up to).
    pub head: Option<Option<u64>>,
    /// The request was HEAD: its response has no content whatever its content-length says.
    pub head_request: bool,
    pub flow: Windows,
    /// DATA bytes received, against the content-length.
    pub received: u64,
}

impl Stream {
    pub fn new(send_window: u32, recv_window: u32) -> Stream {
        Stream {
            recv_closed: false,
            send_closed: false,
            head: None,
            head_request: false,
            flow: Windows::new(send_window, recv_window),
            received: 0,
        }
    }

    pub fn done(&self) -> bool {
        self.recv_closed && self.send_closed
    }
}
