//! One stream's state on the client side (RFC 9113 §5.1): whether each direction has ended,
//! whether its response head came, and its two flow-control windows.

/// A stream weir opened and that is not yet closed both ways.
#[derive(Debug)]
pub struct Stream {
    /// END_STREAM received: half-closed (remote).
    pub recv_closed: bool,
    /// END_STREAM sent: half-closed (local).
    pub send_closed: bool,
    /// The final response head came, with its content-length (which DATA must add up to).
    pub head: Option<Option<u64>>,
    /// What weir may still send (the server's window; may go below 0 when the server lowers
    /// SETTINGS_INITIAL_WINDOW_SIZE).
    pub send_window: i64,
    /// What the server may still send before weir gives some back.
    pub recv_window: i64,
    /// Taken by the consumer, not yet given back in a WINDOW_UPDATE.
    pub released: u32,
    pub received: u64,
}

impl Stream {
    pub fn new(send_window: u32, recv_window: u32) -> Stream {
        Stream {
            recv_closed: false,
            send_closed: false,
            head: None,
            send_window: i64::from(send_window),
            recv_window: i64::from(recv_window),
            released: 0,
            received: 0,
        }
    }

    pub fn done(&self) -> bool {
        self.recv_closed && self.send_closed
    }
}
