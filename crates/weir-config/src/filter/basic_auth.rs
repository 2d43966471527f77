//! `kind = "basic_auth"`: requests need a user and password of an htpasswd file
//! (`users_file`, see `htpasswd.rs`), else 401 with a `Basic` challenge for `realm`. The
//! user's name may go upstream in `user_header`. `weir check` reads the file (`check_file`).

use std::path::PathBuf;

use super::fields;
use super::htpasswd;
use crate::read::{self, Fields, Sink, Span};

const KEYS: &[&str] = &["users_file", "realm", "user_header"];

/// The realm when none is given.
pub const DEFAULT_REALM: &str = "weir";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BasicAuth {
    pub users_file: PathBuf,
    /// Printable ASCII without `"` and `\`, so it is quoted as written.
    pub realm: String,
    /// Lower-cased; the client's own values of it are always removed.
    pub user_header: Option<String>,
}

pub(super) fn read(
    sink: &mut Sink<'_>,
    t: &Fields<'_, '_>,
    what: &str,
    users_file: &mut Option<Span>,
) -> BasicAuth {
    t.check_keys(sink, &fields::keys(KEYS));
    let mut b = BasicAuth {
        users_file: PathBuf::new(),
        realm: DEFAULT_REALM.to_string(),
        user_header: None,
    };
    if let Some(v) = t.require(sink, "users_file", what, "\"/etc/weir/htpasswd\"") {
        if let Some(s) = read::string(sink, v) {
            match s.is_empty() {
                true => sink.error(v.span(), "expected a file path, found an empty string"),
                false => {
                    b.users_file = PathBuf::from(s);
                    *users_file = Some(v.span());
                }
            }
        }
    }
    if let Some(v) = t.get("realm") {
        if let Some(s) = read::string(sink, v) {
            let ok = s
                .bytes()
                .all(|c| (b' '..=b'~').contains(&c) && c != b'"' && c != b'\\');
            match ok {
                true => b.realm = s.to_string(),
                false => sink.error(
                    v.span(),
                    format!("invalid realm {s:?}: use printable ASCII without `\"` or `\\`"),
                ),
            }
        }
    }
    if let Some(v) = t.get("user_header") {
        if let Some(s) = read::string(sink, v) {
            b.user_header = fields::field_name(sink, s, v.span());
        }
    }
    b
}

/// The users file loads as the running filter would load it (`weir check`).
pub(crate) fn check_file(sink: &mut Sink<'_>, b: &BasicAuth, span: &Span) {
    if let Err(e) = htpasswd::read(&b.users_file) {
        sink.error(span.clone(), e.to_string());
    }
}
