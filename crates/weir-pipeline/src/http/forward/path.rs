//! The request's path in normal form (`weir_config::path`: dot segments, merged slashes,
//! percent-encodings), before the route is looked up: routing, the route's filters and the
//! upstream then all see the one path that was matched, so `/open/../admin/` cannot reach
//! `/admin/` past its filters. The access log keeps the path as the client sent it.

use http::uri::{Parts, PathAndQuery};
use http::{Request, Uri};
use weir_config::path::{normalize, PathError, PathRules};

/// Rewrites the request's target to its normal form; a path that already is costs one pass
/// over its bytes.
pub fn normalize_target<B>(req: &mut Request<B>, rules: PathRules) -> Result<(), PathError> {
    let Some(path) = normalize(req.uri().path(), rules)? else {
        return Ok(());
    };
    let pq = match req.uri().query() {
        Some(q) => format!("{path}?{q}"),
        None => path,
    };
    let mut parts: Parts = std::mem::take(req.uri_mut()).into_parts();
    // Only characters the target already had, or `%XX` from its own `%`: it parses.
    parts.path_and_query = Some(PathAndQuery::try_from(pq).map_err(|_| PathError::BadEscape)?);
    *req.uri_mut() = Uri::from_parts(parts).map_err(|_| PathError::BadEscape)?;
    Ok(())
}
