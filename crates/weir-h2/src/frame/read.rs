//! One frame at a time from the front of a read buffer, its payload shared with the buffer
//! (no copy), every rule of RFC 9113 §4.2 and §6 that a frame alone shows checked here.

use std::ops::Range;

use bytes::{Buf, Bytes, BytesMut};

use super::constants::{flag, kind, StreamId, HEAD_LEN};
use super::error::Error;
use super::settings::Settings;
use crate::Reason;

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

/// The next frame, taken off the front of `buf`; `None` until it is all there. `max_frame`
/// is the largest payload this end allows (its SETTINGS_MAX_FRAME_SIZE): a larger one is
/// refused as soon as its header is read, before its payload is waited for.
pub fn read(buf: &mut BytesMut, max_frame: u32) -> Result<Option<Frame>, Error> {
    if buf.len() < HEAD_LEN {
        return Ok(None);
    }
    let len = u32::from_be_bytes([0, buf[0], buf[1], buf[2]]);
    if len > max_frame {
        return Err(conn(
            Reason::FRAME_SIZE_ERROR,
            "frame larger than SETTINGS_MAX_FRAME_SIZE",
        ));
    }
    if buf.len() < HEAD_LEN + len as usize {
        return Ok(None);
    }
    let (t, flags) = (buf[3], buf[4]);
    // The reserved bit is ignored (§4.1).
    let stream = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]) & 0x7fff_ffff;
    let mut frame = buf.split_to(HEAD_LEN + len as usize);
    frame.advance(HEAD_LEN);
    parse(t, flags, stream, frame.freeze()).map(Some)
}

/// The next frame when it is a HEADERS frame holding a whole field block and nothing else (no
/// padding, no priority), all there: its stream, whether it ends the stream, and where the
/// block lies in `buf`, for it to be decoded there and then skipped. Splitting it off as
/// `read` does would take and drop a shared count, for bytes read once; three such frames
/// per proxied gRPC call. `None` for anything else, which `read` takes (and checks).
pub fn whole_headers(buf: &[u8], max_frame: u32) -> Option<(StreamId, bool, Range<usize>)> {
    if buf.len() < HEAD_LEN || buf[3] != kind::HEADERS {
        return None;
    }
    let len = u32::from_be_bytes([0, buf[0], buf[1], buf[2]]);
    let end = HEAD_LEN + len as usize;
    let flags = buf[4];
    let stream = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]) & 0x7fff_ffff;
    let plain = flags & (flag::PADDED | flag::PRIORITY) == 0 && flags & flag::END_HEADERS != 0;
    (len <= max_frame && buf.len() >= end && stream != 0 && plain).then_some((
        stream,
        flags & flag::END_STREAM != 0,
        HEAD_LEN..end,
    ))
}

fn conn(r: Reason, why: &'static str) -> Error {
    Error::Connection(r, why)
}

fn parse(t: u8, flags: u8, stream: StreamId, mut p: Bytes) -> Result<Frame, Error> {
    let has = |f: u8| flags & f != 0;
    let on_stream = |what: &'static str| match stream {
        0 => Err(conn(Reason::PROTOCOL_ERROR, what)),
        _ => Ok(()),
    };
    let on_connection = |what: &'static str| match stream {
        0 => Ok(()),
        _ => Err(conn(Reason::PROTOCOL_ERROR, what)),
    };
    Ok(match t {
        kind::DATA => {
            on_stream("DATA on stream 0")?;
            let flow_len = p.len() as u32;
            unpad(&mut p, has(flag::PADDED))?;
            Frame::Data {
                stream,
                data: p,
                end_stream: has(flag::END_STREAM),
                flow_len,
            }
        }
        kind::HEADERS => {
            on_stream("HEADERS on stream 0")?;
            unpad(&mut p, has(flag::PADDED))?;
            if has(flag::PRIORITY) {
                if p.len() < 5 {
                    return Err(conn(
                        Reason::FRAME_SIZE_ERROR,
                        "HEADERS too short for its priority",
                    ));
                }
                depends_on_itself(stream, &p)?;
                p.advance(5);
            }
            Frame::Headers {
                stream,
                block: p,
                end_stream: has(flag::END_STREAM),
                end_headers: has(flag::END_HEADERS),
            }
        }
        kind::PRIORITY => {
            on_stream("PRIORITY on stream 0")?;
            if p.len() != 5 {
                return Err(Error::Stream(
                    stream,
                    Reason::FRAME_SIZE_ERROR,
                    "PRIORITY not 5 bytes",
                ));
            }
            depends_on_itself(stream, &p)?;
            Frame::Priority { stream }
        }
        kind::RST_STREAM => {
            on_stream("RST_STREAM on stream 0")?;
            if p.len() != 4 {
                return Err(conn(Reason::FRAME_SIZE_ERROR, "RST_STREAM not 4 bytes"));
            }
            Frame::RstStream {
                stream,
                code: p.get_u32(),
            }
        }
        kind::SETTINGS => {
            on_connection("SETTINGS on a stream")?;
            if has(flag::ACK) {
                if !p.is_empty() {
                    return Err(conn(
                        Reason::FRAME_SIZE_ERROR,
                        "SETTINGS ACK with a payload",
                    ));
                }
                Frame::SettingsAck
            } else {
                if !p.len().is_multiple_of(6) {
                    return Err(conn(
                        Reason::FRAME_SIZE_ERROR,
                        "SETTINGS not a multiple of 6 bytes",
                    ));
                }
                Frame::Settings(Settings::parse(&p)?)
            }
        }
        kind::PUSH_PROMISE => {
            on_stream("PUSH_PROMISE on stream 0")?;
            unpad(&mut p, has(flag::PADDED))?;
            if p.len() < 4 {
                return Err(conn(Reason::FRAME_SIZE_ERROR, "PUSH_PROMISE too short"));
            }
            Frame::PushPromise {
                stream,
                promised: p.get_u32() & 0x7fff_ffff,
            }
        }
        kind::PING => {
            on_connection("PING on a stream")?;
            if p.len() != 8 {
                return Err(conn(Reason::FRAME_SIZE_ERROR, "PING not 8 bytes"));
            }
            let mut payload = [0; 8];
            payload.copy_from_slice(&p);
            Frame::Ping {
                ack: has(flag::ACK),
                payload,
            }
        }
        kind::GOAWAY => {
            on_connection("GOAWAY on a stream")?;
            if p.len() < 8 {
                return Err(conn(
                    Reason::FRAME_SIZE_ERROR,
                    "GOAWAY shorter than 8 bytes",
                ));
            }
            let last_stream = p.get_u32() & 0x7fff_ffff;
            let code = p.get_u32();
            Frame::GoAway {
                last_stream,
                code,
                debug: p,
            }
        }
        kind::WINDOW_UPDATE => {
            if p.len() != 4 {
                return Err(conn(Reason::FRAME_SIZE_ERROR, "WINDOW_UPDATE not 4 bytes"));
            }
            let increment = p.get_u32() & 0x7fff_ffff;
            if increment == 0 {
                let why = "WINDOW_UPDATE of 0";
                return Err(match stream {
                    0 => conn(Reason::PROTOCOL_ERROR, why),
                    s => Error::Stream(s, Reason::PROTOCOL_ERROR, why),
                });
            }
            Frame::WindowUpdate { stream, increment }
        }
        kind::CONTINUATION => {
            on_stream("CONTINUATION on stream 0")?;
            Frame::Continuation {
                stream,
                block: p,
                end_headers: has(flag::END_HEADERS),
            }
        }
        other => Frame::Unknown {
            kind: other,
            stream,
        },
    })
}

/// Takes a padded frame's Pad Length byte off the front and its padding off the end (§6.1).
fn unpad(p: &mut Bytes, padded: bool) -> Result<(), Error> {
    if !padded {
        return Ok(());
    }
    let Some(&pad) = p.first() else {
        return Err(conn(
            Reason::FRAME_SIZE_ERROR,
            "padded frame without its Pad Length",
        ));
    };
    if usize::from(pad) >= p.len() {
        return Err(conn(
            Reason::PROTOCOL_ERROR,
            "padding as long as the frame or longer",
        ));
    }
    p.advance(1);
    p.truncate(p.len() - usize::from(pad));
    Ok(())
}

/// A priority block (HEADERS' or PRIORITY's) naming the stream itself as its parent (§5.3.1).
fn depends_on_itself(stream: StreamId, p: &[u8]) -> Result<(), Error> {
    let parent = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff;
    match parent == stream {
        true => Err(Error::Stream(
            stream,
            Reason::PROTOCOL_ERROR,
            "a stream depending on itself",
        )),
        false => Ok(()),
    }
}
