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

mod args;
mod http;
mod tokio_mode;
#[cfg(target_os = "linux")]
mod uring;

pub use args::{Args, Mode};

pub fn run(args: Args) -> crate::Res {
    match args.mode {
        Mode::Epoll => tokio_mode::run(args.listen, args.upstream),
        #[cfg(target_os = "linux")]
        Mode::Uring => uring::run(&args),
        #[cfg(not(target_os = "linux"))]
        Mode::Uring => Err("io_uring is Linux only".into()),
    }
}
