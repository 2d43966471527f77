//! htpasswd files for `basic_auth`: `user:hash` per line, `#` comments and blank lines
//! allowed. Only slow, salted hashes are taken: bcrypt (`$2y$`, `$2a$`, `$2b$`, as
//! `htpasswd -B` writes) and argon2 PHC strings (`$argon2id$`, `$argon2i$`, `$argon2d$`).
//! Plain text, crypt(3) (DES, `$1$`, `$5$`, `$6$`), Apache MD5 (`$apr1$`) and `{SHA}` are
//! refused: they are fast to brute-force from a leaked file, and plain text may be mistaken
//! for a hash. `weir check` and the running filter read files with the same code, so a file
//! the check accepts loads.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The most weir reads of a users file: far beyond any real one, small enough to hold.
pub const MAX_USERS_FILE_BYTES: u64 = 4 << 20;

/// The most work one check may take: bcrypt's cost, argon2's memory (KiB) and passes.
pub const MAX_BCRYPT_COST: u32 = 17;
pub const MAX_ARGON2_KIB: u32 = 256 << 10;
pub const MAX_ARGON2_PASSES: u32 = 20;

/// How many bad lines one error lists (the rest are counted).
const LISTED: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Bcrypt,
    Argon2,
}

/// One user of the file, its hash checked to be well-formed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub scheme: Scheme,
    /// The hash as written (a bcrypt string or an argon2 PHC string).
    pub hash: String,
}

/// One line that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// 1-based.
    pub line: usize,
    /// The user it names, when it names one.
    pub user: Option<String>,
    pub why: String,
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.user {
            Some(u) => write!(f, "line {}, user `{u}`: {}", self.line, self.why),
            None => write!(f, "line {}: {}", self.line, self.why),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum UsersError {
    #[error("users file {}: cannot read: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("users file {}: larger than {} MiB, the most weir reads", path.display(), MAX_USERS_FILE_BYTES >> 20)]
    TooLarge { path: PathBuf },
    #[error("users file {}: not UTF-8 text", path.display())]
    NotText { path: PathBuf },
    #[error("users file {}: {}", path.display(), list(lines))]
    Lines {
        path: PathBuf,
        lines: Vec<LineError>,
    },
}

fn list(lines: &[LineError]) -> String {
    let mut s: Vec<String> = lines.iter().take(LISTED).map(|l| l.to_string()).collect();
    if lines.len() > LISTED {
        s.push(format!("and {} more bad lines", lines.len() - LISTED));
    }
    s.join("; ")
}

/// Reads and parses the users file at `path` (at most [`MAX_USERS_FILE_BYTES`]).
pub fn read(path: &Path) -> Result<Vec<User>, UsersError> {
    let file = std::fs::File::open(path).map_err(|source| UsersError::Read {
        path: path.to_owned(),
        source,
    })?;
    let mut bytes = Vec::new();
    file.take(MAX_USERS_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| UsersError::Read {
            path: path.to_owned(),
            source,
        })?;
    if bytes.len() as u64 > MAX_USERS_FILE_BYTES {
        return Err(UsersError::TooLarge {
            path: path.to_owned(),
        });
    }
    let text = String::from_utf8(bytes).map_err(|_| UsersError::NotText {
        path: path.to_owned(),
    })?;
    parse(&text).map_err(|lines| UsersError::Lines {
        path: path.to_owned(),
        lines,
    })
}

/// Parses a users file's text; every bad line is reported.
pub fn parse(text: &str) -> Result<Vec<User>, Vec<LineError>> {
    let mut users: Vec<User> = Vec::new();
    let mut bad = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let n = i + 1;
        let Some((name, hash)) = line.split_once(':') else {
            bad.push(LineError {
                line: n,
                user: None,
                why: "expected `user:hash`".into(),
            });
            continue;
        };
        let err = |why: String| LineError {
            line: n,
            user: Some(name.to_string()),
            why,
        };
        if name.is_empty() {
            bad.push(LineError {
                line: n,
                user: None,
                why: "the user name is empty".into(),
            });
            continue;
        }
        if users.iter().any(|u| u.name == name) {
            bad.push(err("the user is already listed on an earlier line".into()));
            continue;
        }
        match scheme(hash) {
            Ok(scheme) => users.push(User {
                name: name.to_string(),
                scheme,
                hash: hash.to_string(),
            }),
            Err(why) => bad.push(err(why)),
        }
    }
    match bad.is_empty() {
        true => Ok(users),
        false => Err(bad),
    }
}

const REHASH: &str = "hash the password with bcrypt (`htpasswd -B`) or argon2";

/// The scheme of a well-formed bcrypt or argon2 hash; why anything else is refused.
fn scheme(hash: &str) -> Result<Scheme, String> {
    if ["$2y$", "$2a$", "$2b$"].iter().any(|p| hash.starts_with(p)) {
        let parts = bcrypt::HashParts::from_str(hash)
            // The crate's error quotes the whole hash: not for a log.
            .map_err(|_| "not a valid bcrypt hash (`$2y$COST$` and 53 characters)".to_string())?;
        // What htpasswd -B writes. Each step doubles the work: cost 18 is seconds of CPU per
        // request that is not remembered yet, which a wrong password can ask for at will.
        if !(4..=MAX_BCRYPT_COST).contains(&parts.get_cost()) {
            return Err(format!(
                "bcrypt cost {} is outside 4..={MAX_BCRYPT_COST}",
                parts.get_cost()
            ));
        }
        return Ok(Scheme::Bcrypt);
    }
    if ["$argon2id$", "$argon2i$", "$argon2d$"]
        .iter()
        .any(|p| hash.starts_with(p))
    {
        let phc = argon2::PasswordHash::new(hash)
            .map_err(|e| format!("not a valid argon2 PHC string ({e})"))?;
        let p = argon2::Params::try_from(&phc)
            .map_err(|e| format!("argon2 parameters not usable ({e})"))?;
        // Each check takes this memory and time, for every request not remembered yet.
        if p.m_cost() > MAX_ARGON2_KIB || p.t_cost() > MAX_ARGON2_PASSES {
            return Err(format!(
                "argon2 m={} t={} is more than weir verifies (m at most {MAX_ARGON2_KIB} KiB, t at most {MAX_ARGON2_PASSES})",
                p.m_cost(),
                p.t_cost()
            ));
        }
        if phc.hash.is_none() || phc.salt.is_none() {
            return Err("argon2 PHC string without salt or hash".into());
        }
        return Ok(Scheme::Argon2);
    }
    let what = if hash.starts_with("$apr1$") {
        "Apache MD5 (`$apr1$`) hashes are refused: they are fast to brute-force"
    } else if hash.starts_with("{SHA}") {
        "`{SHA}` hashes are refused: unsalted SHA-1 is fast to brute-force"
    } else if ["$1$", "$5$", "$6$"].iter().any(|p| hash.starts_with(p)) {
        "crypt(3) hashes (`$1$`, `$5$`, `$6$`) are refused"
    } else if hash.starts_with("$2x$") {
        "`$2x$` is a bcrypt variant made for a broken implementation; it is refused"
    } else if hash.len() == 13
        && hash
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'/')
    {
        "crypt(3) DES hashes are refused: they keep only 8 characters of a password and are fast to brute-force"
    } else {
        "plain-text passwords (or unknown hash schemes) are refused"
    };
    Err(format!("{what}; {REHASH}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_bcrypt_argon2_comments() {
        let text = "# users\n\nalice:$2y$05$IujhHJrLQ4B.SErvCkWlRO/FBox9DDhPEsArQKZfD2RHolSSpaS.y\n  bob:$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$6Q3RnhJuiXRFvAXz3DbFGp7V5ej5v4U/4Nhp7AxE5Bg\n";
        let users = parse(text).unwrap();
        assert_eq!(users.len(), 2);
        assert_eq!(users[0].scheme, Scheme::Bcrypt);
        assert_eq!(users[1].name, "bob");
        assert_eq!(users[1].scheme, Scheme::Argon2);
    }

    #[test]
    fn refuses_weak_schemes_with_lines() {
        let text = "a:$apr1$abc$def\nb:{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M=\nc:abJnggxhB/yWI\nd:secret\ne:$6$x$y\nnocolon\n";
        let bad = parse(text).unwrap_err();
        let lines: Vec<_> = bad.iter().map(|e| (e.line, e.user.clone())).collect();
        assert_eq!(
            lines,
            vec![
                (1, Some("a".into())),
                (2, Some("b".into())),
                (3, Some("c".into())),
                (4, Some("d".into())),
                (5, Some("e".into())),
                (6, None)
            ]
        );
        assert!(bad[0].why.contains("$apr1$"), "{}", bad[0].why);
        assert!(bad[2].why.contains("DES"), "{}", bad[2].why);
        assert!(bad[3].why.contains("plain-text"), "{}", bad[3].why);
    }

    #[test]
    fn refuses_hashes_too_costly_to_verify() {
        let bad = parse("a:$2y$18$IujhHJrLQ4B.SErvCkWlRO/FBox9DDhPEsArQKZfD2RHolSSpaS.y\nb:$argon2id$v=19$m=1048576,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$6Q3RnhJuiXRFvAXz3DbFGp7V5ej5v4U/4Nhp7AxE5Bg\n").unwrap_err();
        assert!(bad[0].why.contains("bcrypt cost 18"), "{}", bad[0].why);
        assert!(bad[1].why.contains("m=1048576"), "{}", bad[1].why);
    }
}
