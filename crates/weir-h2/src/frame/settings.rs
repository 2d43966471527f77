//! A SETTINGS frame's parameters (RFC 9113 §6.5.2, RFC 8441 §3), each value checked.

use super::constants::{DEFAULT_MAX_FRAME, MAX_MAX_FRAME, MAX_WINDOW};
use super::error::Error;
use crate::Reason;

/// Setting identifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum Setting {
    HeaderTableSize = 0x1,
    EnablePush = 0x2,
    MaxConcurrentStreams = 0x3,
    InitialWindowSize = 0x4,
    MaxFrameSize = 0x5,
    MaxHeaderListSize = 0x6,
    EnableConnectProtocol = 0x8,
}

/// The parameters a SETTINGS frame carried (the last value of each, as §6.5.3 says to
/// process them in order); the ones it did not carry are `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    pub header_table_size: Option<u32>,
    pub enable_push: Option<bool>,
    pub max_concurrent_streams: Option<u32>,
    pub initial_window_size: Option<u32>,
    pub max_frame_size: Option<u32>,
    pub max_header_list_size: Option<u32>,
    pub enable_connect_protocol: Option<bool>,
}

impl Settings {
    /// Parses a SETTINGS payload (a multiple of 6 bytes, checked by the caller). Unknown
    /// identifiers are ignored (§6.5.2).
    pub(super) fn parse(payload: &[u8]) -> Result<Settings, Error> {
        let mut s = Settings::default();
        let conn = |r, why| Err(Error::Connection(r, why));
        for p in payload.chunks_exact(6) {
            let id = u16::from_be_bytes([p[0], p[1]]);
            let v = u32::from_be_bytes([p[2], p[3], p[4], p[5]]);
            match id {
                0x1 => s.header_table_size = Some(v),
                0x2 => match v {
                    0 | 1 => s.enable_push = Some(v == 1),
                    _ => return conn(Reason::PROTOCOL_ERROR, "SETTINGS_ENABLE_PUSH not 0 or 1"),
                },
                0x3 => s.max_concurrent_streams = Some(v),
                0x4 if v > MAX_WINDOW => {
                    return conn(
                        Reason::FLOW_CONTROL_ERROR,
                        "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1",
                    )
                }
                0x4 => s.initial_window_size = Some(v),
                0x5 if !(DEFAULT_MAX_FRAME..=MAX_MAX_FRAME).contains(&v) => {
                    return conn(
                        Reason::PROTOCOL_ERROR,
                        "SETTINGS_MAX_FRAME_SIZE outside 2^14..2^24-1",
                    )
                }
                0x5 => s.max_frame_size = Some(v),
                0x6 => s.max_header_list_size = Some(v),
                0x8 => match v {
                    0 | 1 => s.enable_connect_protocol = Some(v == 1),
                    _ => {
                        return conn(
                            Reason::PROTOCOL_ERROR,
                            "SETTINGS_ENABLE_CONNECT_PROTOCOL not 0 or 1",
                        )
                    }
                },
                _ => {}
            }
        }
        Ok(s)
    }

    /// The parameters set, as (identifier, value) pairs for [`super::write::settings`].
    pub fn pairs(&self) -> Vec<(Setting, u32)> {
        let flag = |b: bool| u32::from(b);
        [
            (Setting::HeaderTableSize, self.header_table_size),
            (Setting::EnablePush, self.enable_push.map(flag)),
            (Setting::MaxConcurrentStreams, self.max_concurrent_streams),
            (Setting::InitialWindowSize, self.initial_window_size),
            (Setting::MaxFrameSize, self.max_frame_size),
            (Setting::MaxHeaderListSize, self.max_header_list_size),
            (
                Setting::EnableConnectProtocol,
                self.enable_connect_protocol.map(flag),
            ),
        ]
        .into_iter()
        .filter_map(|(id, v)| v.map(|v| (id, v)))
        .collect()
    }
}
