//! The bounds weir puts on a head it reads. Their own file because the parsers
//! (`request`, `response`) enforce them and the errors (`error`) name them, and the parsers
//! return those errors.

/// The most header fields a request may carry (hyper's limit too): more
/// answers 431.
pub const MAX_REQUEST_HEADERS: usize = 100;
/// The longest request target (hyper's limit too): longer answers 414.
pub const MAX_URI_LEN: usize = u16::MAX as usize - 1;

/// The largest response head accepted (status line, headers, 1xx heads).
pub const MAX_RESPONSE_HEAD: usize = 64 * 1024;
/// The most response header fields accepted.
pub const MAX_RESPONSE_HEADERS: usize = 100;
