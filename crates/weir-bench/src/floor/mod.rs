//! `weir-bench floor`: the kernel floor of weir's keep-alive HTTP/1.1 work, with
//! epoll and with io_uring. A measurement, not a transport: the smallest proxy
//! that does what weir does per request (read a request head from the client,
//! write it to the connection's own upstream, read the response with
//! Content-Length framing, write it back), on one thread, with the same logic
//! and buffers in both modes, so that syscalls and CPU per request compare the
//! two kernel interfaces and nothing else. docs/BENCHMARKS.md ("io_uring against
//! epoll: the floor") has the figures; bench/floor.sh runs the comparison.
//!
//! - `epoll`: tokio's current-thread runtime (mio, edge-triggered epoll), as weir.
//! - `uring`: the io-uring crate: multishot accept, multishot receive into a
//!   provided buffer ring, sends straight from the received buffer, every turn's
//!   submissions in one io_uring_enter that also waits, registered files.

use std::net::SocketAddr;

/// Each receive buffer (one per connection for epoll, each of the ring's for io_uring).
const BUF_SIZE: usize = 16 * 1024;

mod http;
mod tokio_mode;
#[cfg(target_os = "linux")]
mod uring;

#[derive(clap::ValueEnum, Clone, Copy)]
pub enum Mode {
    Epoll,
    Uring,
}

#[derive(clap::Args)]
pub struct Args {
    #[arg(long, value_enum)]
    pub mode: Mode,
    #[arg(long)]
    pub listen: SocketAddr,
    /// The HTTP/1.1 server each client connection gets its own connection to.
    #[arg(long)]
    pub upstream: SocketAddr,
    /// uring: use plain descriptors instead of registered (fixed) files.
    #[arg(long)]
    pub plain_fds: bool,
    /// uring: let each send's completion wake the loop. By default a turn waits
    /// for one completion more than the sends it submitted (for at most 1 ms), so
    /// that sends that complete inline cost no extra io_uring_enter: the floor of
    /// small exchanges, but bulk bodies go ~25 times slower that way (sends then
    /// block, and the turn waits on), so a real transport would wake on sends.
    #[arg(long)]
    pub wake_on_send: bool,
}

pub fn run(args: Args) -> crate::Res {
    match args.mode {
        Mode::Epoll => tokio_mode::run(args.listen, args.upstream),
        #[cfg(target_os = "linux")]
        Mode::Uring => uring::run(&args),
        #[cfg(not(target_os = "linux"))]
        Mode::Uring => Err("io_uring is Linux only".into()),
    }
}
