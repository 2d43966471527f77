//! `kind = "error_pages"`: the body of an answer with one of `statuses` (weir's own or the
//! upstream's) replaced by a page, the status and the other fields kept. The page is a file
//! (`file`, read when the filter is built, at most [`MAX_PAGE`]) or fetched from a pool
//! (`pool`, `path` with `{status}`). A client that prefers JSON gets
//! `application/problem+json` instead.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::at::FilterAt;
use super::fields;
use crate::read::{self, Fields, Sink};

const KEYS: &[&str] = &[
    "statuses",
    "file",
    "content_type",
    "pool",
    "path",
    "timeout",
];

/// The largest page weir serves, from a file or a pool.
pub const MAX_PAGE: u64 = 1 << 20;
/// `path` when a pool is given without one.
pub const DEFAULT_PATH: &str = "/{status}.html";
/// How long a pool's page may take, whole, when `timeout` is not given.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, PartialEq)]
pub struct ErrorPages {
    /// Inclusive ranges, each within 400..=599.
    pub statuses: Vec<(u16, u16)>,
    pub page: Page,
}

impl ErrorPages {
    pub fn covers(&self, status: u16) -> bool {
        self.statuses
            .iter()
            .any(|&(lo, hi)| (lo..=hi).contains(&status))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Page {
    File {
        path: PathBuf,
        /// The `Content-Type` served; by the file's extension when not given.
        content_type: String,
    },
    Pool {
        pool: String,
        /// Starts with `/`; `{status}` is replaced by the answer's status.
        path: String,
        timeout: Duration,
    },
}

pub(super) fn read(
    sink: &mut Sink<'_>,
    t: &Fields<'_, '_>,
    what: &str,
    at: &mut FilterAt,
) -> ErrorPages {
    t.check_keys(sink, &fields::keys(KEYS));
    let mut e = ErrorPages {
        statuses: Vec::new(),
        page: Page::File {
            path: PathBuf::new(),
            content_type: String::new(),
        },
    };
    if let Some(v) = t.require(sink, "statuses", what, "[404, \"500-599\"]") {
        e.statuses = statuses(sink, v);
    }
    let content_type = t.get("content_type").and_then(|v| {
        let s = read::string(sink, v)?;
        match http::HeaderValue::from_str(s) {
            Ok(_) if !s.trim().is_empty() => Some(s.to_string()),
            _ => {
                sink.error(v.span(), format!("invalid content_type {s:?}"));
                None
            }
        }
    });
    let timeout = t.duration(sink, "timeout", true);
    match (t.get("file"), t.get("pool")) {
        (Some(_), Some(_)) => {
            let span = t.key_span("pool").unwrap_or(t.span.clone());
            sink.error(span, "give either file or pool, not both");
        }
        (None, None) => sink.error(
            t.span.clone(),
            format!(
                "{what} has no page; add e.g. file = \"/srv/errors/5xx.html\" or pool = \"errors\""
            ),
        ),
        (Some(v), None) => {
            for k in ["path", "timeout"] {
                if let Some(span) = t.key_span(k) {
                    sink.error(
                        span,
                        format!("`{k}` is for a page from a pool; a file is served as it is"),
                    );
                }
            }
            if let Some(s) = read::string(sink, v) {
                if s.is_empty() {
                    sink.error(v.span(), "file is empty; give the page's path");
                } else {
                    at.file = Some(v.span());
                    let path = PathBuf::from(s);
                    let content_type = content_type.unwrap_or_else(|| guess_type(&path).into());
                    e.page = Page::File { path, content_type };
                }
            }
        }
        (None, Some(v)) => {
            if let Some(span) = t.key_span("content_type") {
                sink.error(
                    span,
                    "`content_type` is for a file; a pool's page keeps its own",
                );
            }
            let path = match t.get("path") {
                None => Some(DEFAULT_PATH.to_string()),
                Some(pv) => read::string(sink, pv).and_then(|p| {
                    // `{status}` is the one placeholder; what it becomes is three digits.
                    let sample = p.replace("{status}", "500");
                    match crate::request_path::check_path(&sample) {
                        Ok(()) if sample.contains(['{', '}']) => {
                            sink.error(
                                pv.span(),
                                format!("invalid path {p:?}: the only placeholder is {{status}}"),
                            );
                            None
                        }
                        Ok(()) if !sample.is_ascii() => {
                            sink.error(
                                pv.span(),
                                format!("invalid path {p:?}: percent-encode what is not ASCII"),
                            );
                            None
                        }
                        Ok(()) => Some(p.to_string()),
                        Err(err) => {
                            sink.error(pv.span(), format!("invalid path {p:?}: {err}"));
                            None
                        }
                    }
                }),
            };
            if let (Some(pool), Some(path)) = (read::string(sink, v), path) {
                at.pool = Some(v.span());
                e.page = Page::Pool {
                    pool: pool.to_string(),
                    path,
                    timeout: timeout.unwrap_or(DEFAULT_TIMEOUT),
                };
            }
        }
    }
    e
}

/// `[404, 500, "502-504"]`: statuses and ranges within 400..=599.
fn statuses(sink: &mut Sink<'_>, v: &read::Val<'_>) -> Vec<(u16, u16)> {
    let Some(a) = read::array(sink, v) else {
        return Vec::new();
    };
    if a.is_empty() {
        sink.error(v.span(), "statuses is empty; list at least one status");
    }
    let mut out = Vec::new();
    for item in a.iter() {
        let range = match (read::integer_value(item.get_ref()), item.get_ref().as_str()) {
            (Some(n), _) => error_status(&n.to_string()).map(|s| (s, s)),
            (None, Some(s)) => match s.split_once('-') {
                Some((lo, hi)) => error_status(lo.trim()).and_then(|lo| {
                    let hi = error_status(hi.trim())?;
                    match lo <= hi {
                        true => Ok((lo, hi)),
                        false => Err(format!("the range {s:?} ends before it starts")),
                    }
                }),
                None => error_status(s.trim()).map(|n| (n, n)),
            },
            (None, None) => {
                read::wrong_type(sink, item, "a status or a range such as \"500-599\"");
                continue;
            }
        };
        match range {
            Ok(r) => out.push(r),
            Err(e) => sink.error(item.span(), format!("invalid status: {e}")),
        }
    }
    out
}

fn error_status(s: &str) -> Result<u16, String> {
    match s.parse::<u16>() {
        Ok(n) if (400..=599).contains(&n) => Ok(n),
        Ok(n) => Err(format!(
            "{n} is not an error status; error pages are for 400 to 599"
        )),
        Err(_) => Err(format!(
            "{s:?} is not a status; write 404 or a range such as \"500-599\""
        )),
    }
}

/// The type a page is served with when `content_type` is not given. A short table rather
/// than a MIME database: error pages are HTML, JSON or text; anything else names its type.
fn guess_type(path: &Path) -> &'static str {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("html" | "htm") => "text/html; charset=utf-8",
        Some("json") => "application/json",
        Some("xml") => "application/xml",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// Reads a page file, at most [`MAX_PAGE`] bytes: `weir check` and the data plane both read
/// with this, so a page `check` accepts is one weir serves.
pub fn read_page(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let shown = path.display();
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{shown} is not a file"));
    }
    let mut buf = Vec::new();
    // One byte past the limit tells a file too large even if it grew since `metadata`.
    file.take(MAX_PAGE + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if buf.len() as u64 > MAX_PAGE {
        return Err(format!(
            "{shown} is larger than {} KiB ({} bytes), the most weir serves as an error page",
            MAX_PAGE >> 10,
            meta.len().max(buf.len() as u64)
        ));
    }
    Ok(buf)
}
