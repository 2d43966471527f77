//! Adding and deleting one resource through the admin API, as the `pool`, `route`,
//! `listener` and `certificate` commands do: an add that finds it present is an error, a
//! delete reads the current version and retries when it went stale.

use super::client::{ApiError, Client, Precondition};
use super::error::CtlError;

/// Adds a resource (`If-None-Match: *`); finding it present is an error naming `what`.
pub(super) fn create(
    client: &Client,
    path: &str,
    spec: &serde_json::Value,
    what: &str,
) -> Result<u64, CtlError> {
    match client.put(path, spec, Precondition::Absent) {
        Ok((version, _)) => Ok(version),
        Err(e) if e.status() == Some(412) => Err(CtlError::Exists(what.to_owned())),
        Err(e) => Err(e.into()),
    }
}

/// How a delete ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Deleted {
    Now,
    /// It did not exist (anymore): the wanted state holds, so this is not an error.
    AlreadyGone,
}

/// Reads the current version and deletes that version; when someone changed the resource
/// in between (412), reads again. Deleting is what the caller wants whatever the change was.
pub(super) fn delete(client: &Client, path: &str) -> Result<Deleted, ApiError> {
    const TRIES: usize = 5;
    for attempt in 1.. {
        let Some((_, version)) = client.get(path)? else {
            return Ok(Deleted::AlreadyGone);
        };
        match client.delete(path, version) {
            Ok(()) => return Ok(Deleted::Now),
            Err(e) if e.status() == Some(404) => return Ok(Deleted::AlreadyGone),
            Err(e) if e.status() == Some(412) && attempt < TRIES => continue,
            Err(e) => return Err(e),
        }
    }
    unreachable!("the loop returns")
}

/// Prints the outcome of a delete: `deleted` to stdout, or a note that it was already gone.
pub(super) fn report_delete(what: &str, d: Deleted) {
    match d {
        Deleted::Now => println!("{what} deleted"),
        Deleted::AlreadyGone => eprintln!("{what} does not exist; nothing to delete"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctl::fake;

    const STALE: &str = r#"{"title":"precondition failed","status":412}"#;

    fn requests(log: &std::sync::Mutex<Vec<fake::Seen>>) -> Vec<String> {
        log.lock()
            .unwrap()
            .iter()
            .map(|s| {
                let m = s.if_match.as_deref().unwrap_or("-");
                format!("{} {} {m}", s.method, s.path)
            })
            .collect()
    }

    #[test]
    fn delete_reads_again_when_the_version_went_stale() {
        let (url, log) = fake::serve(|req, before| {
            let gets = before.iter().filter(|s| s.method == "GET").count() as u64;
            match req.method.as_str() {
                "GET" => (200, Some(3 + gets), "{}".into()),
                "DELETE" if req.if_match.as_deref() == Some("\"4\"") => (204, None, "".into()),
                _ => (412, None, STALE.into()),
            }
        });
        let c = Client::new(&url, None);
        assert_eq!(delete(&c, "pools/app").unwrap(), Deleted::Now);
        assert_eq!(
            requests(&log),
            [
                "GET /api/v1/pools/app -",
                r#"DELETE /api/v1/pools/app "3""#,
                "GET /api/v1/pools/app -",
                r#"DELETE /api/v1/pools/app "4""#,
            ]
        );
    }

    #[test]
    fn delete_gives_up_after_five_stale_versions() {
        let (url, log) = fake::serve(|req, _| match req.method.as_str() {
            "GET" => (200, Some(1), "{}".into()),
            _ => (412, None, STALE.into()),
        });
        let c = Client::new(&url, None);
        assert_eq!(delete(&c, "routes/r").unwrap_err().status(), Some(412));
        assert_eq!(requests(&log).len(), 10);
    }

    #[test]
    fn delete_of_something_absent_is_no_error() {
        let (url, _) = fake::serve(|_, _| (404, None, r#"{"title":"not found"}"#.into()));
        let c = Client::new(&url, None);
        assert_eq!(
            delete(&c, "pools/app/endpoints/[::1]:80").unwrap(),
            Deleted::AlreadyGone
        );
    }
}
