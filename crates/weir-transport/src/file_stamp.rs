//! What a watched file looks like now, to see that it changed: device, inode, size and
//! mtime (ns), following symlinks. A rename-replace and a Kubernetes secret's `..data`
//! symlink swap both show as a new stamp, which inotify on the file itself would miss after
//! a swap. Missing = `None`.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

pub(crate) type Stamp = Option<(u64, u64, u64, i64)>;

pub fn stamp(path: &Path) -> Stamp {
    let m = std::fs::metadata(path).ok()?;
    Some((
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime() * 1_000_000_000 + m.mtime_nsec(),
    ))
}
