//! Flow control (RFC 9113 §5.2, §6.9), the same on both sides of a connection: the windows
//! each end may still send into, DATA written as they allow, and the bytes the caller took
//! given back in one WINDOW_UPDATE once half a window's worth is taken.

use crate::frame::{write, StreamId, MAX_WINDOW};

/// One stream's, or the connection's, two windows.
#[derive(Debug)]
pub(crate) struct Windows {
    /// What this end may still send: the peer's window (below 0 when the peer lowers
    /// SETTINGS_INITIAL_WINDOW_SIZE).
    pub send: i64,
    /// What the peer may still send before bytes are given back.
    pub recv: i64,
    /// Taken by the caller, not yet given back.
    released: u32,
}

impl Windows {
    pub fn new(send: u32, recv: u32) -> Windows {
        Windows {
            send: i64::from(send),
            recv: i64::from(recv),
            released: 0,
        }
    }

    /// `n` bytes were taken: given back to the peer once half of `size` (the window this
    /// end sets) is, while `open` (the peer may still send on it).
    pub fn release(&mut self, out: &mut Vec<u8>, id: StreamId, n: u32, size: u32, open: bool) {
        self.released = self.released.saturating_add(n);
        if open && self.released >= size / 2 {
            write::window_update(out, id, self.released);
            self.recv += i64::from(self.released);
            self.released = 0;
        }
    }

    /// The peer's WINDOW_UPDATE; false when it takes the window past 2^31-1.
    pub fn grow(&mut self, increment: u32) -> bool {
        self.send += i64::from(increment);
        self.send <= i64::from(MAX_WINDOW)
    }

    /// DATA of `flow_len` bytes (padding included) came; false when it overran the window.
    pub fn take(&mut self, flow_len: u32) -> bool {
        self.recv -= i64::from(flow_len);
        self.recv >= 0
    }
}

/// Writes DATA frames on `id` for as much of `data` as both windows and the peer's frame
/// size allow, END_STREAM with the last byte when `end_stream` and all of it went. How
/// many bytes went; the caller marks the stream ended when that is all of `data`.
pub(crate) fn send_data(
    out: &mut Vec<u8>,
    conn: &mut Windows,
    stream: &mut Windows,
    id: StreamId,
    data: &[u8],
    end_stream: bool,
    max_frame: u32,
) -> usize {
    if data.is_empty() {
        if end_stream {
            write::data(out, id, &[], true);
        }
        return 0;
    }
    let mut sent = 0;
    while sent < data.len() {
        let room = conn.send.min(stream.send).min(i64::from(max_frame));
        if room <= 0 {
            break;
        }
        let n = (data.len() - sent).min(room as usize);
        let last = end_stream && sent + n == data.len();
        write::data(out, id, &data[sent..sent + n], last);
        conn.send -= n as i64;
        stream.send -= n as i64;
        sent += n;
    }
    sent
}
