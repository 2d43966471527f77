//! Zero-copy relaying with splice(2): socket → pipe → socket, so payload bytes
//! never enter user space. Written by hand because no maintained crate wraps
//! splice for tokio sockets; the readiness handling is tokio's own
//! (`readable`/`writable` + `try_io`), so a spurious wakeup costs one EAGAIN.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use tokio::io::Interest;
use tokio::net::TcpStream;

use crate::tcp::relay::Activity;

/// Bytes moved per splice call; also the pipe's capacity.
const CHUNK: usize = 64 * 1024;

struct Pipe {
    r: OwnedFd,
    w: OwnedFd,
}

impl Pipe {
    fn new() -> io::Result<Pipe> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two fds into the array on success.
        let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both fds are fresh and owned by nobody else.
        unsafe {
            Ok(Pipe {
                r: OwnedFd::from_raw_fd(fds[0]),
                w: OwnedFd::from_raw_fd(fds[1]),
            })
        }
    }
}

fn splice(from: i32, to: i32, len: usize) -> io::Result<usize> {
    // SAFETY: plain syscall on fds we own for the duration of the call.
    let n = unsafe {
        libc::splice(
            from,
            std::ptr::null_mut(),
            to,
            std::ptr::null_mut(),
            len,
            libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Copies `src` to `dst` until EOF; returns the bytes moved.
pub async fn copy(
    src: &TcpStream,
    dst: &TcpStream,
    activity: &Activity,
    count: &std::sync::atomic::AtomicU64,
) -> io::Result<u64> {
    let pipe = Pipe::new()?;
    let (src_fd, dst_fd) = (src.as_raw_fd(), dst.as_raw_fd());
    let (pipe_r, pipe_w) = (pipe.r.as_raw_fd(), pipe.w.as_raw_fd());
    let mut total = 0u64;
    loop {
        // The pipe is empty here, so EAGAIN can only mean the socket is.
        let n = loop {
            src.readable().await?;
            match src.try_io(Interest::READABLE, || splice(src_fd, pipe_w, CHUNK)) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        };
        if n == 0 {
            return Ok(total);
        }
        activity.touch();
        // The pipe holds data here, so EAGAIN can only mean dst is full.
        let mut left = n;
        while left > 0 {
            dst.writable().await?;
            match dst.try_io(Interest::WRITABLE, || splice(pipe_r, dst_fd, left)) {
                Ok(m) => left -= m,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        }
        total += n as u64;
        count.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
    }
}
