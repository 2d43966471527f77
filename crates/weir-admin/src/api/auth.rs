//! Bearer-token access to the admin listener: the token compared in constant time (as
//! SHA-256 digests, so its length does not show either), and its guessing slowed down per
//! source address ([`throttle`](super::throttle)).

use std::net::IpAddr;
use std::time::{Duration, Instant};

use http::{header, HeaderMap, StatusCode};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::browser;
use super::problem::Problem;
use super::throttle::{self, Source, Throttle};

#[derive(Debug)]
pub struct Auth {
    /// The SHA-256 of the token from `admin.token_file` / `--token-file`; None = no token
    /// configured.
    token: Option<[u8; 32]>,
    /// Reads need the token too when other hosts can reach the listener.
    reads_need_token: bool,
    throttle: Throttle,
}

/// Why the token file cannot be used: defined beside the reader in weir-config, which
/// `weir check` uses too.
pub use weir_config::TokenError;

impl Auth {
    pub fn new(token: Option<String>, loopback: bool) -> Auth {
        Auth {
            token: token.map(|t| Sha256::digest(t.as_bytes()).into()),
            reads_need_token: !loopback,
            throttle: Throttle::default(),
        }
    }

    /// Logs the failed attempts held back by the rate limit on lines; call every
    /// [`throttle::FLUSH_EVERY`].
    pub fn flush_log(&self) {
        self.throttle.flush(Instant::now());
    }

    /// Reads the token file (the token is its content, without surrounding whitespace).
    pub fn read_token(path: &std::path::Path) -> Result<String, TokenError> {
        weir_config::read_token(path)
    }

    /// Whether this request may go on. Without a token, only a request sent to a loopback
    /// name may (DNS rebinding: a page whose name now resolves to 127.0.0.1 sends its own
    /// name in `Host`). With one, a request the token does not otherwise guard (a read on
    /// loopback) needs it too when sent to another name. A request that needs the token,
    /// from a source (`peer`) that sent too many wrong ones, is refused unchecked (429).
    pub fn check(&self, headers: &HeaderMap, write: bool, peer: IpAddr) -> Result<(), Problem> {
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
        let (source, now) = (Source::of(peer), Instant::now());
        if let Err(left) = self.throttle.admit(source, now) {
            return Err(too_many_attempts(left));
        }
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            // The scheme name is case-insensitive (RFC 9110 §11.1).
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, t)| t.trim());
        match given {
            Some(g) if bool::from(Sha256::digest(g.as_bytes()).ct_eq(token)) => {
                self.throttle.succeeded(source, now);
                Ok(())
            }
            Some(_) => {
                self.throttle.failed(source, now);
                Err(unauthorized("the bearer token is wrong".into()))
            }
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

fn too_many_attempts(left: Duration) -> Problem {
    let secs = throttle::secs(left);
    Problem::new(
        StatusCode::TOO_MANY_REQUESTS,
        "too-many-attempts",
        "too many wrong tokens",
        format!(
            "this address sent {} or more wrong bearer tokens in a row: its requests that need \
             the token are refused, unchecked, for another {secs} s (each further wrong token \
             doubles the wait, up to {} s)",
            throttle::FREE,
            throttle::CAP.as_secs()
        ),
    )
    .retry_after(secs)
}
