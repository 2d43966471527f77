//! `kind = "basic_auth"`: a user and password of an htpasswd file, else 401 `unauthorized`
//! with a `Basic` challenge.
//!
//! bcrypt and argon2 are slow on purpose (bcrypt cost 10 is ~50 ms of CPU), so a check runs
//! on the blocking pool, at most [`verifiers`] at once (a flood of wrong passwords queues
//! there instead of taking every runtime thread), and a success is remembered for
//! [`CACHE_TTL`] as an HMAC of the password under a key made per process, compared in
//! constant time: a user's next requests cost a hash, not a bcrypt. Failures are never
//! remembered. The file is looked at once a second (a stat, off the runtime's threads); a
//! changed file that reads replaces the users and forgets every remembered success, one
//! that does not read keeps the users there were and says why in the log.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use base64::Engine;
use hmac::{Hmac, Mac};
use http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderName, HeaderValue, Request};
use sha2::Sha256;
use subtle::ConstantTimeEq;
use tokio::sync::Semaphore;
use tracing::{error, info};
use weir_config::filter::htpasswd::{self, Scheme};

use super::{Cx, Verdict};
use crate::codec::client_body::ClientBody;
use crate::http::error::error_response;
use crate::reason::Reason;

/// How long a verified password is taken without verifying it again.
pub const CACHE_TTL: Duration = Duration::from_secs(300);
/// At most this many users are remembered at once.
const CACHE_MAX: usize = 10_000;
/// How often the users file is looked at.
const PERIOD: Duration = Duration::from_secs(1);
/// Verified for a user the file does not have, so an unknown user takes as long as a
/// known one with a wrong password (cost 10, as `htpasswd -B` writes by default).
const DUMMY: &str = "$2y$10$qWgnrBnAsATnJNaw0a3f3.91klyMIKQ/P019fuA5S49/pb33J6nLq";

/// How many verifications run at once: one per CPU, so they never take more than the
/// machine has, and the blocking pool is never flooded.
fn verifiers() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

#[derive(Debug)]
pub struct BasicAuth {
    /// `Basic realm="...", charset="UTF-8"`.
    challenge: HeaderValue,
    user_header: Option<HeaderName>,
    users: Arc<Users>,
}

/// The users of the file and what was verified; shared with the file's watch.
struct Users {
    path: PathBuf,
    /// By name: the scheme and hash.
    hashes: ArcSwap<HashMap<String, (Scheme, Arc<str>)>>,
    /// Bumped when the users change, so a check that began before does not remember a
    /// success the new file may not grant.
    generation: AtomicU64,
    cache: Mutex<HashMap<String, Remembered>>,
    /// HMAC keyed for remembered passwords (the key random per process), cloned per check:
    /// keying it again on every request would cost two more SHA-256 blocks.
    keyed: Hmac<Sha256>,
    verifying: Arc<Semaphore>,
}

impl std::fmt::Debug for Users {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Users").field("path", &self.path).finish()
    }
}

struct Remembered {
    digest: [u8; 32],
    until: Instant,
}

impl BasicAuth {
    pub fn build(b: &weir_config::filter::BasicAuth) -> Result<BasicAuth, String> {
        let list = htpasswd::read(&b.users_file).map_err(|e| e.to_string())?;
        let challenge = format!("Basic realm=\"{}\", charset=\"UTF-8\"", b.realm);
        let users = Arc::new(Users {
            path: b.users_file.clone(),
            hashes: ArcSwap::from_pointee(by_name(list)),
            generation: AtomicU64::new(0),
            cache: Mutex::new(HashMap::new()),
            keyed: <Hmac<Sha256> as Mac>::new_from_slice(&rand::random::<[u8; 32]>())
                .expect("any key length"),
            verifying: Arc::new(Semaphore::new(verifiers())),
        });
        // Built outside a runtime only by unit tests, which watch nothing.
        if tokio::runtime::Handle::try_current().is_ok() {
            watch(&users);
        }
        Ok(BasicAuth {
            challenge: HeaderValue::from_str(&challenge).map_err(|e| e.to_string())?,
            user_header: b
                .user_header
                .as_deref()
                .map(|n| HeaderName::from_bytes(n.as_bytes()))
                .transpose()
                .map_err(|e| e.to_string())?,
            users,
        })
    }

    pub async fn request(&self, cx: &mut Cx<'_>, req: &mut Request<ClientBody>) -> Verdict {
        // Only weir says who the user is.
        if let Some(h) = &self.user_header {
            req.headers_mut().remove(h);
        }
        let Some((user, password)) = credentials(req.headers()) else {
            return self.deny();
        };
        if !self.users.check(&user, password).await {
            return self.deny();
        }
        // The password is for weir, not for the upstream.
        req.headers_mut().remove(AUTHORIZATION);
        if let Some(h) = &self.user_header {
            if let Ok(v) = HeaderValue::from_bytes(user.as_bytes()) {
                req.headers_mut().insert(h.clone(), v);
            }
        }
        cx.user = Some(user);
        Verdict::Continue
    }

    fn deny(&self) -> Verdict {
        let mut resp = error_response(Reason::Unauthorized);
        resp.headers_mut()
            .insert(WWW_AUTHENTICATE, self.challenge.clone());
        Verdict::Answer(Box::new(resp), Reason::Unauthorized)
    }
}

fn by_name(list: Vec<htpasswd::User>) -> HashMap<String, (Scheme, Arc<str>)> {
    list.into_iter()
        .map(|u| (u.name, (u.scheme, u.hash.into())))
        .collect()
}

/// The user and password of one `Authorization: Basic` field (RFC 7617); anything else,
/// two fields included, is no credentials.
fn credentials(h: &HeaderMap) -> Option<(String, Vec<u8>)> {
    let mut all = h.get_all(AUTHORIZATION).iter();
    let v = all.next()?;
    if all.next().is_some() {
        return None;
    }
    let v = v.to_str().ok()?.trim();
    let (scheme, token) = v.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(token.trim_start())
        .ok()?;
    let colon = raw.iter().position(|&b| b == b':')?;
    let user = std::str::from_utf8(&raw[..colon]).ok()?.to_string();
    Some((user, raw[colon + 1..].to_vec()))
}

impl Users {
    fn digest(&self, password: &[u8]) -> [u8; 32] {
        let mut mac = self.keyed.clone();
        mac.update(password);
        mac.finalize().into_bytes().into()
    }

    async fn check(&self, user: &str, password: Vec<u8>) -> bool {
        let digest = self.digest(&password);
        let generation = self.generation.load(Relaxed);
        if let Some(r) = self.cache.lock().unwrap().get(user) {
            if r.until > Instant::now() && bool::from(r.digest.ct_eq(&digest)) {
                return true;
            }
        }
        let hash = self.hashes.load().get(user).cloned();
        let Ok(permit) = self.verifying.clone().acquire_owned().await else {
            return false;
        };
        // The permit goes with the work: a client that leaves does not free the slot
        // before the CPU is done.
        let ok = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            verify(hash, &password)
        })
        .await
        .unwrap_or(false);
        if ok {
            let mut cache = self.cache.lock().unwrap();
            if self.generation.load(Relaxed) == generation {
                if cache.len() >= CACHE_MAX {
                    let now = Instant::now();
                    cache.retain(|_, r| r.until > now);
                    if cache.len() >= CACHE_MAX {
                        cache.clear();
                    }
                }
                cache.insert(
                    user.to_string(),
                    Remembered {
                        digest,
                        until: Instant::now() + CACHE_TTL,
                    },
                );
            }
        }
        ok
    }

    /// Takes a new list of users: remembered successes are forgotten.
    fn replace(&self, list: Vec<htpasswd::User>) {
        let mut cache = self.cache.lock().unwrap();
        self.hashes.store(Arc::new(by_name(list)));
        self.generation.fetch_add(1, Relaxed);
        cache.clear();
    }
}

/// Verifies on the calling (blocking) thread; a user the file does not have is verified
/// against [`DUMMY`] and fails.
fn verify(hash: Option<(Scheme, Arc<str>)>, password: &[u8]) -> bool {
    let Some((scheme, hash)) = hash else {
        let _ = bcrypt::verify(password, DUMMY);
        return false;
    };
    match scheme {
        Scheme::Bcrypt => bcrypt::verify(password, &hash).unwrap_or(false),
        Scheme::Argon2 => {
            use argon2::PasswordVerifier;
            let Ok(phc) = argon2::PasswordHash::new(&hash) else {
                return false;
            };
            // The hash's own algorithm and parameters are used.
            argon2::Argon2::default()
                .verify_password(password, &phc)
                .is_ok()
        }
    }
}

/// What the file looked like: device, inode, size, mtime (ns). Missing = `None`.
type Stamp = Option<(u64, u64, u64, i64)>;

fn stamp(path: &Path) -> Stamp {
    let m = std::fs::metadata(path).ok()?;
    Some((
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime() * 1_000_000_000 + m.mtime_nsec(),
    ))
}

/// Looks at the users file once a second for as long as the filter is in use (the task
/// ends once the last snapshot holding it is gone), as certificate files are
/// (`transport/tls/reload.rs`): a rename-replace or a symlink swap shows as a new stamp.
fn watch(users: &Arc<Users>) {
    let weak: Weak<Users> = Arc::downgrade(users);
    let path = users.path.clone();
    tokio::spawn(async move {
        let p = path.clone();
        let mut seen = tokio::task::spawn_blocking(move || stamp(&p))
            .await
            .ok()
            .flatten();
        let mut tick = tokio::time::interval(PERIOD);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            if weak.strong_count() == 0 {
                return;
            }
            let p = path.clone();
            let Ok(now) = tokio::task::spawn_blocking(move || stamp(&p)).await else {
                continue;
            };
            if now == seen {
                continue;
            }
            seen = now;
            let p = path.clone();
            let Ok(read) = tokio::task::spawn_blocking(move || htpasswd::read(&p)).await else {
                continue;
            };
            let Some(users) = weak.upgrade() else { return };
            match read {
                Ok(list) => {
                    let n = list.len();
                    users.replace(list);
                    info!(file = %path.display(), users = n, "users file reloaded");
                }
                Err(e) => error!(
                    file = %path.display(),
                    "users file not reloaded, the previous users stay: {e}"
                ),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(s: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        let v = base64::engine::general_purpose::STANDARD.encode(s);
        h.insert(AUTHORIZATION, format!("Basic {v}").parse().unwrap());
        h
    }

    #[test]
    fn reads_credentials() {
        assert_eq!(
            credentials(&basic("alice:pa:ss")),
            Some(("alice".to_string(), b"pa:ss".to_vec()))
        );
        assert_eq!(credentials(&basic("nocolon")), None);
        let mut h = HeaderMap::new();
        h.insert(AUTHORIZATION, "Bearer abc".parse().unwrap());
        assert_eq!(credentials(&h), None);
        let mut two = basic("a:b");
        two.append(AUTHORIZATION, "Basic YTpi".parse().unwrap());
        assert_eq!(credentials(&two), None);
    }

    #[test]
    fn verifies_bcrypt_and_argon2() {
        use argon2::password_hash::{PasswordHasher, SaltString};
        let b = bcrypt::hash("pw", 4).unwrap();
        assert!(verify(Some((Scheme::Bcrypt, b.as_str().into())), b"pw"));
        assert!(!verify(Some((Scheme::Bcrypt, b.as_str().into())), b"px"));
        let salt = SaltString::encode_b64(b"0123456789abcdef").unwrap();
        let a = argon2::Argon2::default()
            .hash_password(b"pw", &salt)
            .unwrap()
            .to_string();
        assert!(verify(Some((Scheme::Argon2, a.as_str().into())), b"pw"));
        assert!(!verify(Some((Scheme::Argon2, a.as_str().into())), b"px"));
        assert!(!verify(None, b"pw"));
    }
}
