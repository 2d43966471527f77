//! Acknowledging at once what arrived, when weir waits for the rest of a message.
//!
//! Linux delays its ACKs on a connection it sees going request, answer, request (its
//! "pingpong" mode, which every kept-alive connection is in), hoping to carry them on the
//! next bytes it sends. A peer that writes one message in more than one piece without
//! TCP_NODELAY (Nagle's algorithm, on by default in many clients and application servers)
//! sends each piece after the first only once what went before is acknowledged. The
//! message then waits for the delayed-ACK timer, 40 ms or more, on every request or answer
//! after a connection's first: measured here, +44 ms each through weir, HAProxy 2.6 and
//! nginx 1.22 alike, for answers and for request bodies sent after their heads
//! (bench/acks.py; tests/e2e/acks.rs). Over HTTP/2 too, for a request's DATA sent after
//! its HEADERS (HAProxy and nginx did not wait there) and for an HTTP/2 backend's answer
//! whose DATA came after its HEADERS (HAProxy waits there too).
//!
//! TCP_QUICKACK has the kernel send the ACK now and leave pingpong mode until weir next
//! sends on the connection, so the codecs set it once per message, and only when a message
//! has begun to arrive and weir must wait for the rest (again if weir sent bytes on the
//! connection meanwhile: a full-duplex exchange, weir's own `100 Continue`): a message that
//! arrives whole costs nothing.

use std::os::fd::AsFd;

/// Has the kernel send now the ACK it may be holding back on the TCP socket `tcp`. Best
/// effort: a failure only means the ACK goes when the kernel's timer says.
pub fn ack_now(tcp: &impl AsFd) {
    #[cfg(target_os = "linux")]
    let _ = socket2::SockRef::from(tcp).set_tcp_quickack(true);
    #[cfg(not(target_os = "linux"))]
    let _ = tcp;
}

/// A stream over TCP whose kernel can be told to acknowledge at once (for codecs generic
/// over their stream: the upstream HTTP/2 connection's task).
pub trait AckNow {
    fn ack_now(&self);
}

/// In memory (the codecs' unit tests): no kernel holds anything back.
impl AckNow for tokio::io::DuplexStream {
    fn ack_now(&self) {}
}
