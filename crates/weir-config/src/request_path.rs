//! A path as a request target writes it, as the config's paths must be (an error page's
//! path, a rewrite's). Its own file because the walk (walk.rs) and the filters' readers
//! (filter/) both check paths with it, and the walk calls those readers.

/// A path as written in a request target: absolute, no query, no fragment.
pub(crate) fn check_path(p: &str) -> Result<(), String> {
    if !p.starts_with('/') {
        return Err(format!("it must start with `/`, as in \"/{}\"", p));
    }
    if let Some(c) = p
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || matches!(c, '?' | '#'))
    {
        return Err(format!("{c:?} is not allowed in a path"));
    }
    Ok(())
}
