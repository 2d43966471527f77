//! The frame handling both ends of an HTTP/2 connection share (RFC 9113 §4-6): reading the
//! frames out of the read buffer, and what SETTINGS, PING, WINDOW_UPDATE, RST_STREAM, GOAWAY,
//! CONTINUATION and the order of frames mean for a connection. None of that depends on
//! which end weir is, so it is written once, here, and expanded inside
//! `client::H2ClientConnection`'s and `server::H2ServerConnection`'s `impl`s. A macro rather
//! than a trait or a shared struct: the two ends keep different streams, events and
//! settings, and each expansion compiles to the code that was written twice before.
//!
//! The expansion uses fields and methods both connections have (`settings_seen`, `block`,
//! `streams`, `events`, `flow`, `peer_initial_window`, `peer_max_frame`, `control_queued`,
//! `out`, `cfg.max_header_list`; `fail`, `flooded`, `idle`, `stream_error`, `headers`,
//! `data`, `block_done`), and calls the steps that differ, which each end defines:
//! - `flooding()`: a bound of this end's that the frames so far broke (checked after each);
//! - `go_away_received(last_stream, code)`: the peer's GOAWAY;
//! - `reset_received(stream, code)`: the peer reset an open stream (already removed);
//! - `peer_settings(&settings)`: what only this end reads of the peer's SETTINGS.
//!
//! The texts are the two errors whose wording is each end's own: a preface not followed by
//! SETTINGS, and a PUSH_PROMISE.

macro_rules! frames {
    (preface: $preface:literal, push: $push:literal) => {
        /// Reads and handles the frames in `buf` until it holds no whole one.
        fn frames_in(&mut self, buf: &mut BytesMut) -> Result<(), ConnectionError> {
            loop {
                // A whole block in one HEADERS frame, where one may come, is decoded in the
                // buffer.
                let plain = match self.settings_seen && self.block.is_none() {
                    true => frame::whole_headers(buf, DEFAULT_MAX_FRAME),
                    false => None,
                };
                if let Some((stream, end_stream, block)) = plain {
                    let end = block.end;
                    let done = self.headers(stream, &buf[block], end_stream, true);
                    buf.advance(end);
                    done?;
                } else {
                    let f = match frame::read(buf, DEFAULT_MAX_FRAME) {
                        Ok(Some(f)) => f,
                        Ok(None) => return Ok(()),
                        Err(frame::Error::Connection(r, why)) => return Err(self.fail(r, why)),
                        Err(frame::Error::Stream(..)) if self.block.is_some() => {
                            return Err(
                                self.fail(Reason::PROTOCOL_ERROR, "a frame inside a header block")
                            )
                        }
                        Err(frame::Error::Stream(s, r, _)) => {
                            self.stream_error(s, r);
                            continue;
                        }
                    };
                    self.frame(f)?;
                }
                if let Some((flood, why)) = self.flooding() {
                    return Err(self.flooded(flood, why));
                }
            }
        }

        fn frame(&mut self, f: Frame) -> Result<(), ConnectionError> {
            if !self.settings_seen && !matches!(f, Frame::Settings(_)) {
                return Err(self.fail(Reason::PROTOCOL_ERROR, $preface));
            }
            if let Some(b) = &self.block {
                match f {
                    Frame::Continuation { stream, .. } if stream == b.stream => {}
                    _ => {
                        return Err(
                            self.fail(Reason::PROTOCOL_ERROR, "a frame inside a header block")
                        )
                    }
                }
            }
            match f {
                Frame::Settings(s) => self.settings(s)?,
                Frame::SettingsAck | Frame::Priority { .. } | Frame::Unknown { .. } => {}
                Frame::Ping {
                    ack: false,
                    payload,
                } => {
                    self.control_queued += 1;
                    write::ping(&mut self.out, true, payload);
                }
                Frame::Ping { ack: true, .. } => {}
                Frame::GoAway {
                    last_stream, code, ..
                } => self.go_away_received(last_stream, Reason(code)),
                Frame::PushPromise { .. } => return Err(self.fail(Reason::PROTOCOL_ERROR, $push)),
                Frame::WindowUpdate {
                    stream: 0,
                    increment,
                } => {
                    if !self.flow.grow(increment) {
                        return Err(
                            self.fail(Reason::FLOW_CONTROL_ERROR, "connection window above 2^31-1")
                        );
                    }
                    self.events.push_back(Event::Window { stream: 0 });
                }
                Frame::WindowUpdate { stream, increment } => {
                    if self.idle(stream) {
                        return Err(
                            self.fail(Reason::PROTOCOL_ERROR, "WINDOW_UPDATE on an idle stream")
                        );
                    }
                    if let Some(s) = self.streams.get_mut(&stream) {
                        if !s.flow.grow(increment) {
                            self.stream_error(stream, Reason::FLOW_CONTROL_ERROR);
                        } else {
                            self.events.push_back(Event::Window { stream });
                        }
                    }
                }
                Frame::RstStream { stream, code } => {
                    if self.idle(stream) {
                        return Err(
                            self.fail(Reason::PROTOCOL_ERROR, "RST_STREAM on an idle stream")
                        );
                    }
                    if self.streams.remove(&stream).is_some() {
                        self.reset_received(stream, Reason(code));
                    }
                }
                Frame::Headers {
                    stream,
                    block,
                    end_stream,
                    end_headers,
                } => self.headers(stream, &block, end_stream, end_headers)?,
                Frame::Continuation {
                    block, end_headers, ..
                } => {
                    let Some(b) = self.block.as_mut() else {
                        return Err(
                            self.fail(Reason::PROTOCOL_ERROR, "CONTINUATION without HEADERS")
                        );
                    };
                    if !b.extend(&block, self.cfg.max_header_list) {
                        return Err(self
                            .flooded(Flood::Continuation, "a header block past any allowed size"));
                    }
                    if end_headers {
                        if let Some(mut b) = self.block.take() {
                            let bytes = std::mem::take(&mut b.bytes);
                            self.block_done(b, &bytes)?;
                        }
                    }
                }
                Frame::Data {
                    stream,
                    data,
                    end_stream,
                    flow_len,
                } => self.data(stream, data, end_stream, flow_len)?,
            }
            Ok(())
        }

        fn settings(&mut self, s: Settings) -> Result<(), ConnectionError> {
            self.settings_seen = true;
            if let Some(w) = s.initial_window_size {
                let delta = i64::from(w) - i64::from(self.peer_initial_window);
                self.peer_initial_window = w;
                for st in self.streams.values_mut() {
                    st.flow.send += delta;
                    if st.flow.send > i64::from(MAX_WINDOW) {
                        return Err(
                            self.fail(Reason::FLOW_CONTROL_ERROR, "a stream window above 2^31-1")
                        );
                    }
                }
                if delta > 0 {
                    self.events.push_back(Event::Window { stream: 0 });
                }
            }
            if let Some(m) = s.max_frame_size {
                self.peer_max_frame = m;
            }
            self.peer_settings(&s);
            // SETTINGS_HEADER_TABLE_SIZE is the peer's decoder's: weir's encoder keeps no
            // table, so any size suits it.
            self.control_queued += 1;
            write::settings_ack(&mut self.out);
            Ok(())
        }
    };
}

pub(crate) use frames;
