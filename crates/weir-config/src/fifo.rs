//! Opening what a path names without hanging on a FIFO. Opening a FIFO for reading blocks
//! until something opens it for writing, and reading one blocks while its writer says
//! nothing: `weir check FIFO` with no writer waited forever. A FIFO is opened without
//! waiting and read while it gives something, each wait bounded by [`FIFO_WAIT`].

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::fs::{fcntl_getfl, fcntl_setfl, OFlags};

/// How long a FIFO may give nothing (neither data nor its end) before it is refused.
pub const FIFO_WAIT: Duration = Duration::from_secs(10);

/// `path` opened for reading: a FIFO as a [`Fifo`], anything else as the plain file.
pub(crate) fn open(path: &Path) -> io::Result<Source> {
    // Non-blocking, so that opening a FIFO does not wait for a writer; the flag is taken
    // off again for anything else (a device, say), which is read as before.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(OFlags::NONBLOCK.bits() as i32)
        .open(path)?;
    let meta = file.metadata()?;
    if meta.file_type().is_fifo() {
        return Ok(Source::Fifo(Fifo(file)));
    }
    fcntl_setfl(&file, fcntl_getfl(&file)? - OFlags::NONBLOCK)?;
    Ok(Source::File(file, meta))
}

pub(crate) enum Source {
    File(File, std::fs::Metadata),
    Fifo(Fifo),
}

/// A FIFO read as data comes. Each read first waits (at most [`FIFO_WAIT`]) for data or
/// for the writer to close: a non-blocking read before any writer came would say "end".
pub(crate) struct Fifo(File);

impl Read for Fifo {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let wait = Timespec {
            tv_sec: FIFO_WAIT.as_secs() as _,
            tv_nsec: 0,
        };
        loop {
            let mut fds = [PollFd::new(&self.0, PollFlags::IN)];
            match poll(&mut fds, Some(&wait)) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "nothing was written to this FIFO for {} s (does it have a writer?)",
                            FIFO_WAIT.as_secs()
                        ),
                    ))
                }
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
            // Readable, or its writer closed (then 0: the end).
            match self.0.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                r => return r,
            }
        }
    }
}
