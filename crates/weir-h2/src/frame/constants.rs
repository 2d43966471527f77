//! The fixed numbers of HTTP/2's framing (RFC 9113 §3.4, §4, §6): sizes and limits, frame
//! types and flags, and the stream identifier. Their own file because reading, writing and
//! SETTINGS all use them, and nothing here uses those.

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
