//! HTTP/2 frames (RFC 9113 §4, §6): read from a buffer with the rules of §4 and §6 checked
//! (`read`), and written into one (`write`). What a frame means for a stream or the
//! connection (states, windows, limits) is the connection layer's.

mod ids;
mod read;
mod settings;
pub mod write;

use bytes::Bytes;

pub use ids::{IdHasher, StreamMap};
pub use read::{read, whole_headers, Error};
pub use settings::{Setting, Settings};

/// The client's connection preface (RFC 9113 §3.4), before its SETTINGS.
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// A frame header's size.
pub const HEAD_LEN: usize = 9;
/// SETTINGS_MAX_FRAME_SIZE's initial value and least allowed.
pub const DEFAULT_MAX_FRAME: u32 = 1 << 14;
/// SETTINGS_MAX_FRAME_SIZE's largest allowed.
pub const MAX_MAX_FRAME: u32 = (1 << 24) - 1;
/// The largest flow-control window (RFC 9113 §6.9.1).
pub const MAX_WINDOW: u32 = (1 << 31) - 1;

/// Frame types (RFC 9113 §6).
pub mod kind {
    pub const DATA: u8 = 0x0;
    pub const HEADERS: u8 = 0x1;
    pub const PRIORITY: u8 = 0x2;
    pub const RST_STREAM: u8 = 0x3;
    pub const SETTINGS: u8 = 0x4;
    pub const PUSH_PROMISE: u8 = 0x5;
    pub const PING: u8 = 0x6;
    pub const GOAWAY: u8 = 0x7;
    pub const WINDOW_UPDATE: u8 = 0x8;
    pub const CONTINUATION: u8 = 0x9;
}

/// Frame flags.
pub mod flag {
    pub const END_STREAM: u8 = 0x1;
    pub const ACK: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;
    pub const PADDED: u8 = 0x8;
    pub const PRIORITY: u8 = 0x20;
}

/// A stream identifier (31 bits).
pub type StreamId = u32;

/// A frame as read, its padding and priority fields checked and taken off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Data {
        stream: StreamId,
        data: Bytes,
        end_stream: bool,
        /// What the frame counts against the windows: its whole payload, padding included.
        flow_len: u32,
    },
    Headers {
        stream: StreamId,
        /// The field block fragment: the whole block when `end_headers`, else its start
        /// (CONTINUATION frames carry the rest).
        block: Bytes,
        end_stream: bool,
        end_headers: bool,
    },
    /// PRIORITY: deprecated (RFC 9113 §5.3.2), checked and otherwise ignored.
    Priority {
        stream: StreamId,
    },
    RstStream {
        stream: StreamId,
        code: u32,
    },
    Settings(Settings),
    SettingsAck,
    PushPromise {
        stream: StreamId,
        promised: StreamId,
    },
    Ping {
        ack: bool,
        payload: [u8; 8],
    },
    GoAway {
        last_stream: StreamId,
        code: u32,
        debug: Bytes,
    },
    WindowUpdate {
        stream: StreamId,
        increment: u32,
    },
    Continuation {
        stream: StreamId,
        block: Bytes,
        end_headers: bool,
    },
    /// A type this implementation does not know: ignored (RFC 9113 §4.1), but the
    /// connection layer must still check it is not inside a field block.
    Unknown {
        kind: u8,
        stream: StreamId,
    },
}

#[cfg(test)]
mod tests;
