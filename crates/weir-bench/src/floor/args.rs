//! The floor relay's command line, and the buffer size both modes share.

use std::net::SocketAddr;

/// Each receive buffer (one per connection for epoll, each of the ring's for io_uring).
pub(super) const BUF_SIZE: usize = 16 * 1024;

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
