//! Reading what weir is given: a config file (or stdin), a token file. Never more than a
//! limit from anything, be it a file, a pipe or a device like /dev/zero, never waiting
//! forever on a FIFO without a writer, and UTF-8 checked with the position of the first
//! bad byte.

use std::io::Read;
use std::path::Path;

use crate::diagnostic::{Diagnostic, Diagnostics, Omitted, Severity};
use crate::fifo::{self, Source};
use crate::load_error::LoadError;
use crate::span::excerpt;

/// The most weir reads from a config file or standard input: 16 MiB. A real config is a few
/// KB; 16 MiB holds some 100,000 pools with their routes. Checking a valid config that size
/// peaks near 1 GB, the worst 16 MiB inputs near 2.5 GB (the toml tree: docs/BENCHMARKS.md,
/// "Config input bounds"). Anything larger is surely not a config, or a device that never
/// ends.
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// The most weir reads from a token file. A bearer token is a short secret; it has to fit
/// in an `Authorization` header.
pub const MAX_TOKEN_BYTES: u64 = 4096;

/// Why a bounded read failed.
pub(crate) enum ReadFailed {
    Io(std::io::Error),
    /// More than the limit was there.
    TooLarge,
}

/// Reads `path` (`-`: standard input), never more than `limit` bytes and a one-byte probe:
/// the probe tells a source that is too large from one that is exactly at the limit.
pub(crate) fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, ReadFailed> {
    let mut buf = Vec::new();
    let more = if path.as_os_str() == "-" {
        read_up_to(&mut std::io::stdin().lock(), limit, &mut buf)
    } else {
        match fifo::open(path).map_err(ReadFailed::Io)? {
            Source::File(mut file, meta) => {
                // A regular file says its size: refuse it without reading, and read it
                // into one allocation. Devices say 0 and are read up to the bound.
                if meta.is_file() {
                    if meta.len() > limit {
                        return Err(ReadFailed::TooLarge);
                    }
                    buf.reserve_exact(meta.len() as usize);
                }
                read_up_to(&mut file, limit, &mut buf)
            }
            // Up to the bound too, and never waiting longer than FIFO_WAIT for a writer.
            Source::Fifo(mut fifo) => read_up_to(&mut fifo, limit, &mut buf),
        }
    };
    match more.map_err(ReadFailed::Io)? {
        true => Err(ReadFailed::TooLarge),
        false => Ok(buf),
    }
}

/// Reads at most `limit` bytes into `buf`; whether there was more.
fn read_up_to(r: &mut impl Read, limit: u64, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    r.by_ref().take(limit).read_to_end(buf)?;
    if (buf.len() as u64) < limit {
        return Ok(false);
    }
    // Probing into a buffer of its own keeps `buf` from growing past the limit (to
    // twice it, as a Vec grows) for one byte.
    let mut probe = [0u8; 1];
    loop {
        match r.read(&mut probe) {
            Ok(n) => return Ok(n > 0),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Reads a config source (`-`: standard input) of at most [`MAX_CONFIG_BYTES`], as UTF-8.
/// Invalid UTF-8 is a diagnostic at the line and column of the first bad byte.
pub fn read_source(path: &Path) -> Result<String, LoadError> {
    let file = path.display().to_string();
    let bytes = read_bounded(path, MAX_CONFIG_BYTES).map_err(|e| match e {
        ReadFailed::Io(source) => LoadError::Read {
            file: file.clone(),
            source,
        },
        ReadFailed::TooLarge => LoadError::TooLarge {
            file: file.clone(),
            limit: MAX_CONFIG_BYTES,
        },
    })?;
    String::from_utf8(bytes).map_err(|e| LoadError::Invalid(not_utf8(e.as_bytes(), &file)))
}

/// The diagnostic for the first invalid UTF-8 sequence of `bytes`.
fn not_utf8(bytes: &[u8], file: &str) -> Diagnostics {
    let bad = match std::str::from_utf8(bytes) {
        Err(e) => e.valid_up_to(),
        Ok(_) => unreachable!("called on invalid UTF-8"),
    };
    let (before, after) = bytes.split_at(bad);
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let line_end = after
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |i| bad + i);
    let head = std::str::from_utf8(&bytes[line_start..bad]).expect("valid up to `bad`");
    let col0 = head.chars().count();
    // The line as the user's editor would show it: each bad sequence as U+FFFD, the first
    // one at `col0`.
    let line = String::from_utf8_lossy(&bytes[line_start..line_end]);
    let line = line.strip_suffix('\r').unwrap_or(&line);
    let (source_line, caret_col, caret_len) = excerpt(line, col0, 1);
    Diagnostics {
        list: vec![Diagnostic {
            severity: Severity::Error,
            file: file.to_owned(),
            line: before.iter().filter(|&&b| b == b'\n').count() + 1,
            col: col0 + 1,
            len: 1,
            message: format!(
                "invalid UTF-8 (byte 0x{:02X}): a config file must be UTF-8 text",
                bytes[bad]
            ),
            source_line,
            caret_col,
            caret_len,
        }],
        omitted: Omitted::default(),
    }
}

/// Why a token file cannot be used (the admin API's bearer token).
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("token file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("token file {0} is empty")]
    Empty(String),
    #[error("token file {path} is larger than {limit} bytes; a token is a short secret")]
    TooLarge { path: String, limit: u64 },
}

/// Reads a token file: the token is its content, without surrounding whitespace. The one
/// rule for `weir run` (which uses the token) and `weir check` (which reports a file `run`
/// would refuse at its `token_file` key).
pub fn read_token(path: &Path) -> Result<String, TokenError> {
    let p = path.display().to_string();
    let bytes = read_bounded(path, MAX_TOKEN_BYTES).map_err(|e| match e {
        ReadFailed::Io(source) => TokenError::Read {
            path: p.clone(),
            source,
        },
        ReadFailed::TooLarge => TokenError::TooLarge {
            path: p.clone(),
            limit: MAX_TOKEN_BYTES,
        },
    })?;
    let t = String::from_utf8(bytes).map_err(|e| TokenError::Read {
        path: p.clone(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
    })?;
    let t = t.trim();
    if t.is_empty() {
        return Err(TokenError::Empty(p));
    }
    Ok(t.to_owned())
}
