//! Frames appended to a write buffer. The caller keeps each frame within the peer's
//! SETTINGS_MAX_FRAME_SIZE (only a field block is split here, into CONTINUATION frames) and
//! DATA within the flow-control windows.

use super::constants::{flag, kind, StreamId, HEAD_LEN};
use super::settings::Setting;
use crate::Reason;

/// A frame header.
pub fn head(dst: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: StreamId) {
    debug_assert!(len < 1 << 24, "frame payload of {len} bytes");
    let l = (len as u32).to_be_bytes();
    let s = (stream & 0x7fff_ffff).to_be_bytes();
    dst.extend_from_slice(&[l[1], l[2], l[3], kind, flags, s[0], s[1], s[2], s[3]]);
}

pub fn settings(dst: &mut Vec<u8>, values: &[(Setting, u32)]) {
    head(dst, values.len() * 6, kind::SETTINGS, 0, 0);
    for &(id, v) in values {
        dst.extend_from_slice(&(id as u16).to_be_bytes());
        dst.extend_from_slice(&v.to_be_bytes());
    }
}

pub fn settings_ack(dst: &mut Vec<u8>) {
    head(dst, 0, kind::SETTINGS, flag::ACK, 0);
}

pub fn ping(dst: &mut Vec<u8>, ack: bool, payload: [u8; 8]) {
    head(dst, 8, kind::PING, if ack { flag::ACK } else { 0 }, 0);
    dst.extend_from_slice(&payload);
}

pub fn goaway(dst: &mut Vec<u8>, last_stream: StreamId, code: Reason, debug: &[u8]) {
    head(dst, 8 + debug.len(), kind::GOAWAY, 0, 0);
    dst.extend_from_slice(&(last_stream & 0x7fff_ffff).to_be_bytes());
    dst.extend_from_slice(&code.0.to_be_bytes());
    dst.extend_from_slice(debug);
}

pub fn rst_stream(dst: &mut Vec<u8>, stream: StreamId, code: Reason) {
    head(dst, 4, kind::RST_STREAM, 0, stream);
    dst.extend_from_slice(&code.0.to_be_bytes());
}

pub fn window_update(dst: &mut Vec<u8>, stream: StreamId, increment: u32) {
    head(dst, 4, kind::WINDOW_UPDATE, 0, stream);
    dst.extend_from_slice(&(increment & 0x7fff_ffff).to_be_bytes());
}

/// A whole field block: one HEADERS frame, then CONTINUATION frames for what does not fit
/// in `max_frame` bytes.
pub fn headers(
    dst: &mut Vec<u8>,
    stream: StreamId,
    block: &[u8],
    end_stream: bool,
    max_frame: u32,
) {
    let max = max_frame as usize;
    let mut chunks = block.chunks(max.max(1));
    let first = chunks.next().unwrap_or(&[]);
    let mut flags = if end_stream { flag::END_STREAM } else { 0 };
    if first.len() == block.len() {
        flags |= flag::END_HEADERS;
    }
    head(dst, first.len(), kind::HEADERS, flags, stream);
    dst.extend_from_slice(first);
    let mut sent = first.len();
    for c in chunks {
        sent += c.len();
        let flags = if sent == block.len() {
            flag::END_HEADERS
        } else {
            0
        };
        head(dst, c.len(), kind::CONTINUATION, flags, stream);
        dst.extend_from_slice(c);
    }
}

/// A DATA frame's header, for a payload the caller writes after it (or sends apart, as a
/// second buffer of the same write).
pub fn data_head(dst: &mut Vec<u8>, stream: StreamId, len: usize, end_stream: bool) {
    head(
        dst,
        len,
        kind::DATA,
        if end_stream { flag::END_STREAM } else { 0 },
        stream,
    );
}

/// A whole DATA frame.
pub fn data(dst: &mut Vec<u8>, stream: StreamId, payload: &[u8], end_stream: bool) {
    dst.reserve(HEAD_LEN + payload.len());
    data_head(dst, stream, payload.len(), end_stream);
    dst.extend_from_slice(payload);
}
