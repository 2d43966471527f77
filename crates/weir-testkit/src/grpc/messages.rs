//! The Echo service's messages, written as prost structs instead of generated from a
//! .proto (no protoc here); bench/grpc/echo.proto declares the same fields for ghz.

use prost::Message;

/// One call's input; every field is optional (zero means "not asked").
#[derive(Clone, PartialEq, prost::Message)]
pub struct EchoRequest {
    /// Echoed back (streams add ` <i>`, client streams join them with `,`).
    #[prost(string, tag = "1")]
    pub message: String,
    /// Sleep this long before answering (before each reply of a server stream).
    #[prost(uint64, tag = "2")]
    pub delay_ms: u64,
    /// Non-zero: answer with this gRPC status code and the message `asked`.
    #[prost(int32, tag = "3")]
    pub status_code: i32,
    /// Pad each reply with `padding` bytes so that it encodes to this many bytes.
    #[prost(uint64, tag = "4")]
    pub reply_bytes: u64,
    /// Non-empty: trailing metadata `x-echo-trailer: <value>` on the response.
    #[prost(string, tag = "5")]
    pub set_trailer: String,
    /// ServerStream: how many replies to send.
    #[prost(uint64, tag = "6")]
    pub count: u64,
}

/// One reply: the message plus what the backend saw, so a test through a proxy can
/// tell which backend answered and what the proxy forwarded.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EchoReply {
    #[prost(string, tag = "1")]
    pub message: String,
    /// The backend's name, given when it was started.
    #[prost(string, tag = "2")]
    pub server: String,
    /// The `grpc-timeout` request header as received; empty if none.
    #[prost(string, tag = "3")]
    pub grpc_timeout: String,
    /// The `:authority` (or `host`) the backend saw.
    #[prost(string, tag = "4")]
    pub authority: String,
    #[prost(bytes = "vec", tag = "5")]
    pub padding: Vec<u8>,
    /// Stream index (0, 1, ...) or, for ClientStream, the number of requests received.
    #[prost(uint64, tag = "6")]
    pub count: u64,
}

impl EchoReply {
    /// Fills `padding` so the encoded reply is `size` bytes (one byte less where the
    /// padding's length varint steps over a boundary); a reply already that large is
    /// left as it is.
    pub(crate) fn pad_to(&mut self, size: u64) {
        self.padding.clear();
        // The padding field costs 1 tag byte, then a varint length, then n bytes.
        let Some(room) = size.checked_sub(self.encoded_len() as u64 + 1) else {
            return;
        };
        let cost = |n: u64| prost::length_delimiter_len(n as usize) as u64 + n;
        let mut n = room.saturating_sub(prost::length_delimiter_len(room as usize) as u64);
        while cost(n + 1) <= room {
            n += 1;
        }
        self.padding = vec![b'x'; n as usize];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pad_to_hits_the_size() {
        for size in [
            0u64, 5, 20, 128, 129, 130, 131, 200, 16_384, 16_385, 16_386, 100_000,
        ] {
            let mut r = EchoReply {
                message: "hi".into(),
                server: "s".into(),
                ..Default::default()
            };
            let base = r.encoded_len() as u64;
            r.pad_to(size);
            let got = r.encoded_len() as u64;
            if size < base + 3 {
                assert_eq!(got, base, "size {size}");
            } else {
                assert!(got == size || got + 1 == size, "size {size}: got {got}");
            }
        }
    }
}
