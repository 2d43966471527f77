//! Bearer-token access to the admin listener.

use http::{header, HeaderMap, StatusCode};

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

    pub fn check(&self, headers: &HeaderMap, write: bool) -> Result<(), Problem> {
        let Some(token) = &self.token else {
            return Ok(());
        };
        if !write && !self.reads_need_token {
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
            Some(_) => Err(unauthorized("the bearer token is wrong")),
            None => Err(unauthorized(
                "this call needs Authorization: Bearer <token> (the content of admin.token_file)",
            )),
        }
    }
}

fn unauthorized(detail: &str) -> Problem {
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
