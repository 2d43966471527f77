//! Bearer-token access to the admin listener.

use http::{header, HeaderMap, StatusCode};

use super::browser;
use super::problem::Problem;

#[derive(Debug, Clone)]
pub struct Auth {
    /// The token from `admin.token_file` / `--token-file`; None = no token configured.
    token: Option<String>,
    /// Reads need the token too when other hosts can reach the listener.
    reads_need_token: bool,
}

/// Why the token file cannot be used: defined beside the reader in weir-config, which
/// `weir check` uses too.
pub use weir_config::TokenError;

impl Auth {
    pub fn new(token: Option<String>, loopback: bool) -> Auth {
        Auth {
            token,
            reads_need_token: !loopback,
        }
    }

    /// Reads the token file (the token is its content, without surrounding whitespace).
    pub fn read_token(path: &std::path::Path) -> Result<String, TokenError> {
        weir_config::read_token(path)
    }

    /// Whether this request may go on. Without a token, only a request sent to a loopback
    /// name may (DNS rebinding: a page whose name now resolves to 127.0.0.1 sends its own
    /// name in `Host`). With one, a request the token does not otherwise guard (a read on
    /// loopback) needs it too when sent to another name.
    pub fn check(&self, headers: &HeaderMap, write: bool) -> Result<(), Problem> {
        let loopback_host = browser::host_is_loopback(headers);
        let Some(token) = &self.token else {
            if loopback_host {
                return Ok(());
            }
            return Err(Problem::new(
                StatusCode::MISDIRECTED_REQUEST,
                "misdirected-request",
                "the admin listener answers only to loopback names",
                format!(
                    "Host {} is not localhost or a loopback address; without a token \
                     (admin.token_file) the admin listener answers only requests sent to those",
                    browser::host_text(headers)
                ),
            ));
        };
        if !write && !self.reads_need_token && loopback_host {
            return Ok(());
        }
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            // The scheme name is case-insensitive (RFC 9110 §11.1).
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, t)| t.trim());
        match given {
            Some(g) if same(g.as_bytes(), token.as_bytes()) => Ok(()),
            Some(_) => Err(unauthorized("the bearer token is wrong".into())),
            None if write || self.reads_need_token => Err(unauthorized(
                "this call needs Authorization: Bearer <token> (the content of admin.token_file)"
                    .into(),
            )),
            None => Err(unauthorized(format!(
                "Host {} is not localhost or a loopback address: this call needs \
                 Authorization: Bearer <token> (the content of admin.token_file)",
                browser::host_text(headers)
            ))),
        }
    }
}

fn unauthorized(detail: String) -> Problem {
    Problem::new(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "unauthorized",
        detail,
    )
}

/// Compares without stopping at the first difference, so timing does not reveal a prefix.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
