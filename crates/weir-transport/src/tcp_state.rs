//! What the kernel knows about a TCP connection (`TCP_INFO`): whether the peer's FIN has
//! arrived, how long ago data last came and went, whether what was sent is acknowledged.
//!
//! The pool reads it where weir's own view lags: a task that waited for a core sees a
//! backend's close late, and counts a connection's idle time from when it got round to
//! pooling it; the kernel timestamps segments as they arrive.

use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

use tokio::net::TcpStream;

/// `TCP_ESTABLISHED` and `TCP_CLOSE_WAIT` (linux/tcp_states.h; libc does not name the
/// states).
const ESTABLISHED: u8 = 1;
const CLOSE_WAIT: u8 = 8;

/// One look at a connection (times in milliseconds, at the resolution of the kernel's tick:
/// 1 to 4 ms on most systems).
#[derive(Debug, Clone, Copy)]
pub struct TcpState {
    /// Still `ESTABLISHED`: no FIN or reset from the peer yet.
    pub open: bool,
    /// The peer closed with a FIN (`CLOSE_WAIT`), not a reset.
    pub fin_in: bool,
    /// Since a segment carrying data last arrived (the last answer's last bytes, on an
    /// idle connection; the handshake, on one that never carried any).
    pub since_data_in: Duration,
    /// Since data was last sent.
    pub since_data_out: Duration,
    /// Since an acknowledgement last arrived: a FIN carries one, so on a connection the
    /// peer closed while idle this is when its close came.
    pub since_ack_in: Duration,
    /// Segments sent and not yet acknowledged.
    pub unacked: u32,
    /// Smoothed round-trip time and retransmission timeout.
    pub rtt: Duration,
    pub rto: Duration,
}

impl TcpState {
    pub fn of(s: &TcpStream) -> io::Result<TcpState> {
        // SAFETY: tcp_info is plain data; zeroed is a valid value.
        let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        // SAFETY: a valid socket, and a buffer of the length passed.
        let rc = unsafe {
            libc::getsockopt(
                s.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_INFO,
                (&mut info as *mut libc::tcp_info).cast(),
                &mut len,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        let ms = |v: u32| Duration::from_millis(v.into());
        let us = |v: u32| Duration::from_micros(v.into());
        Ok(TcpState {
            open: info.tcpi_state == ESTABLISHED,
            fin_in: info.tcpi_state == CLOSE_WAIT,
            since_data_in: ms(info.tcpi_last_data_recv),
            since_data_out: ms(info.tcpi_last_data_sent),
            since_ack_in: ms(info.tcpi_last_ack_recv),
            unacked: info.tcpi_unacked,
            rtt: us(info.tcpi_rtt),
            rto: us(info.tcpi_rto),
        })
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    /// An open connection reads as open; once the peer closes it, not, and the close
    /// came after the data (the FIN's acknowledgement is the later arrival).
    #[tokio::test]
    async fn sees_the_peer_close_and_when_data_came() {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (ours, theirs) = tokio::join!(TcpStream::connect(l.local_addr().unwrap()), l.accept());
        let (mut ours, mut theirs) = (ours.unwrap(), theirs.unwrap().0);
        theirs.write_all(b"answer").await.unwrap();
        let mut buf = [0u8; 6];
        ours.read_exact(&mut buf).await.unwrap();
        assert!(TcpState::of(&ours).unwrap().open);
        tokio::time::sleep(Duration::from_millis(30)).await;
        drop(theirs);
        let mut eof = [0u8; 1];
        assert_eq!(ours.read(&mut eof).await.unwrap(), 0);
        let k = TcpState::of(&ours).unwrap();
        assert!(!k.open && k.fin_in);
        assert!(k.since_data_in >= Duration::from_millis(20), "{k:?}");
        assert!(k.since_data_in > k.since_ack_in, "{k:?}");
    }
}
