//! `kind = "basic_auth"`: a user and password of an htpasswd file, else 401 `unauthorized`
//! with a `Basic` challenge.
//!
//! bcrypt and argon2 are slow on purpose (bcrypt cost 10 is ~50 ms of CPU), so a check runs
//! on the blocking pool, at most [`verifiers`] at once (a flood of wrong passwords queues
//! there instead of taking every runtime thread; past [`PENDING_PER_VERIFIER`] each waiting,
//! new credentials get 503 `auth_unavailable`), and a success is remembered for
//! [`CACHE_TTL`] under a keyed SHA-256 of the `Authorization` token (the key made per process)
//! (found by lookup: without the key, how long a lookup takes tells a client nothing about
//! another's token): a user's next requests cost a hash, not a bcrypt, and are decided
//! without waiting; new credentials wait for their check (`wait`). Failures are never
//! remembered. The file is looked at once a second (a stat, off the runtime's threads); a
//! changed file that reads replaces the users and forgets every remembered success, one
//! that does not read keeps the users there were and says why in the log.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use base64::Engine;
use http::header::{Entry, AUTHORIZATION, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderName, HeaderValue, Request};
use sha2::{Digest as _, Sha256};
use tokio::sync::{OnceCell, Semaphore};
use tracing::info;
use weir_config::filter::htpasswd::{self, Scheme};

use crate::cx::Cx;
use crate::kind::Kind;
use crate::statics;
use crate::verdict::Verdict;
use weir_codec::client_body::ClientBody;
use weir_http::error::error_response;
use weir_metrics::reason::Reason;
use weir_transport::file_stamp::stamp;
use weir_transport::file_watch;

/// How long a verified password is taken without verifying it again.
pub const CACHE_TTL: Duration = Duration::from_secs(300);
/// At most this many users are remembered at once.
const CACHE_MAX: usize = 10_000;
/// Verified for a user the file does not have, so an unknown user takes as long as a
/// known one with a wrong password (cost 10, as `htpasswd -B` writes by default).
const DUMMY: &str = "$2y$10$qWgnrBnAsATnJNaw0a3f3.91klyMIKQ/P019fuA5S49/pb33J6nLq";

/// How many verifications run at once: one per CPU, so they never take more than the
/// machine has, and the blocking pool is never flooded.
fn verifiers() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// How many checks of new credentials may wait per verifier (bcrypt cost 10: about 1.6 s of
/// queue). Beyond, new credentials get 503 `auth_unavailable` at once: a flood of made-up
/// passwords would otherwise hold every later login, and the requests' memory, for as long
/// as it lasts. Remembered credentials never wait, so their users are not affected.
const PENDING_PER_VERIFIER: usize = 32;

#[derive(Debug)]
pub struct BasicAuth {
    /// `Basic realm="...", charset="UTF-8"`.
    challenge: HeaderValue,
    user_header: Option<HeaderName>,
    users: Arc<Users>,
}

/// The users of the file and what was verified; shared with the file's watch.
struct Users {
    /// The filter's name, for the log.
    filter: String,
    path: PathBuf,
    /// By name: the scheme and hash.
    hashes: ArcSwap<HashMap<String, (Scheme, Arc<str>)>>,
    /// Bumped when the users change, so a check that began before does not remember a
    /// success the new file may not grant.
    generation: AtomicU64,
    cache: Mutex<Cache>,
    /// Checks of new credentials waiting or running, and how many may.
    pending: AtomicUsize,
    max_pending: usize,
    /// SHA-256 that has taken a random 64-byte key (one block, per process), cloned per
    /// check: a token then costs one more block. Not HMAC, whose outer hash (a second block)
    /// only guards against length extension, which needs a digest to extend: these never
    /// leave the process.
    keyed: Sha256,
    verifiers: Arc<Semaphore>,
}

impl std::fmt::Debug for Users {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Users").field("path", &self.path).finish()
    }
}

/// Credentials by the keyed digest of their `Authorization` token, so a remembered client
/// costs one keyed hash and a lookup: no base64, no copy of the password, and no password
/// kept in memory.
#[derive(Default)]
struct Cache {
    known: HashMap<Digest, Remembered, BuildHasherDefault<DigestHasher>>,
    /// Being verified: the clients that send the same new credentials at once (a browser's
    /// parallel requests, a load test's connections) wait for one verification instead of
    /// each paying for its own.
    verifying: HashMap<Digest, Arc<OnceCell<Checked>>, BuildHasherDefault<DigestHasher>>,
}

/// What a check of new credentials found.
#[derive(Clone)]
enum Checked {
    Let(User),
    Refused,
    /// Too many checks waiting: not checked (never remembered).
    Busy,
}

/// A place among the checks that may wait, given back when dropped (also when the client
/// leaves while its check waits).
struct Pending<'a>(&'a AtomicUsize);

impl<'a> Pending<'a> {
    fn take(count: &'a AtomicUsize, max: usize) -> Option<Pending<'a>> {
        let taken = count.fetch_update(Relaxed, Relaxed, |n| (n < max).then_some(n + 1));
        taken.ok().map(|_| Pending(count))
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// The keyed digest of a token. Uniform and unguessable without the process's key, so its
/// first 8 bytes are a hash no client can aim collisions at: the map needs no SipHash of its
/// own, which cost more than the rest of a remembered check.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Digest([u8; 32]);

impl std::hash::Hash for Digest {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let mut first = [0; 8];
        first.copy_from_slice(&self.0[..8]);
        state.write_u64(u64::from_le_bytes(first));
    }
}

/// Passes a [`Digest`]'s `u64` through.
#[derive(Default)]
struct DigestHasher(u64);

impl std::hash::Hasher for DigestHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Only `Digest` is hashed here, through `write_u64`; fold anything else in anyway.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

struct Remembered {
    user: User,
    until: Instant,
}

/// A user let in: the name for the access log, and as a header value for `user_header`
/// (`None` if the name could not be one).
#[derive(Clone)]
struct User {
    name: Arc<str>,
    value: Option<HeaderValue>,
}

impl BasicAuth {
    pub fn build(name: &str, b: &weir_config::filter::BasicAuth) -> Result<BasicAuth, String> {
        // Stamped first: a change made while it is read is seen by the watch below.
        let seen = stamp(&b.users_file);
        let list = htpasswd::read(&b.users_file).map_err(|e| e.to_string())?;
        let challenge = format!("Basic realm=\"{}\", charset=\"UTF-8\"", b.realm);
        let users = Arc::new(Users {
            filter: name.to_string(),
            path: b.users_file.clone(),
            hashes: ArcSwap::from_pointee(by_name(list)),
            generation: AtomicU64::new(0),
            cache: Mutex::new(Cache::default()),
            keyed: Sha256::new_with_prefix(rand::random::<[u8; 64]>()),
            verifiers: Arc::new(Semaphore::new(verifiers())),
            pending: AtomicUsize::new(0),
            max_pending: verifiers() * PENDING_PER_VERIFIER,
        });
        // Looked at once a second, as certificate files are: a rename-replace or a symlink
        // swap shows as a new stamp.
        file_watch::watch(
            &users,
            b.users_file.clone(),
            seen,
            "users file",
            |p| htpasswd::read(p).map_err(|e| e.to_string()),
            |users, list| {
                let n = list.len();
                users.replace(list);
                format!("{n} users")
            },
        );
        Ok(BasicAuth {
            challenge: HeaderValue::from_str(&challenge).map_err(|e| e.to_string())?,
            user_header: b
                .user_header
                .as_deref()
                .map(|n| statics::name(n).ok_or_else(|| format!("{n}: not a header name")))
                .transpose()?,
            users,
        })
    }

    fn let_in(&self, cx: &mut Cx<'_>, req: &mut Request<ClientBody>, user: User) -> Verdict {
        // Only weir says who the user is.
        if let Some(h) = &self.user_header {
            match user.value {
                Some(v) => req.headers_mut().insert(h.clone(), v),
                None => req.headers_mut().remove(h),
            };
        }
        cx.user = Some(user.name);
        Verdict::Continue
    }

    fn deny(&self) -> Verdict {
        let mut resp = error_response(Reason::Unauthorized);
        resp.headers_mut()
            .insert(WWW_AUTHENTICATE, self.challenge.clone());
        Verdict::Answer(Box::new(resp), Reason::Unauthorized)
    }
}

impl Kind for BasicAuth {
    fn build(name: &str, f: &weir_config::Filter) -> Option<Result<Self, String>> {
        let weir_config::Filter::BasicAuth(b) = f else {
            return None;
        };
        Some(BasicAuth::build(name, b))
    }

    /// Credentials remembered as verified let the request in now; new ones are verified by
    /// [`BasicAuth::wait`].
    fn request(&self, cx: &mut Cx<'_>, req: &mut Request<ClientBody>) -> Verdict {
        // The password is for weir, not for the upstream; a request it does not let in
        // goes nowhere.
        let Some(field) = only_one(req.headers_mut(), AUTHORIZATION) else {
            return self.deny();
        };
        let Some(token) = token(&field) else {
            return self.deny();
        };
        match self.users.remembered(&self.users.digest(token), cx.start) {
            Some(user) => self.let_in(cx, req, user),
            None => {
                // For `wait`, which verifies it (a rare path: once per new credentials).
                req.headers_mut().insert(AUTHORIZATION, field);
                Verdict::Wait
            }
        }
    }

    async fn wait(&self, cx: &mut Cx<'_>, req: &mut Request<ClientBody>) -> Verdict {
        let Some(field) = only_one(req.headers_mut(), AUTHORIZATION) else {
            return self.deny();
        };
        let Some(token) = token(&field) else {
            return self.deny();
        };
        match self.users.check(token).await {
            Checked::Let(user) => self.let_in(cx, req, user),
            Checked::Refused => self.deny(),
            Checked::Busy => Verdict::Answer(
                Box::new(error_response(Reason::AuthUnavailable)),
                Reason::AuthUnavailable,
            ),
        }
    }
}

fn by_name(list: Vec<htpasswd::User>) -> HashMap<String, (Scheme, Arc<str>)> {
    list.into_iter()
        .map(|u| (u.name, (u.scheme, u.hash.into())))
        .collect()
}

/// Takes the fields named `name` out of `h`: the value if there was exactly one.
fn only_one(h: &mut HeaderMap, name: HeaderName) -> Option<HeaderValue> {
    let Entry::Occupied(e) = h.entry(name) else {
        return None;
    };
    // Counted in place, then removed whole: cheaper than draining them one by one.
    let one = e.iter().nth(1).is_none();
    let first = e.remove();
    one.then_some(first)
}

/// The token of an `Authorization: Basic` field (RFC 7617); of any other, none. (A token
/// that is not base64 is refused when it is verified.)
fn token(v: &HeaderValue) -> Option<&[u8]> {
    let v = v.as_bytes().trim_ascii();
    let space = v.iter().position(|&b| b == b' ')?;
    v[..space]
        .eq_ignore_ascii_case(b"basic")
        .then(|| v[space + 1..].trim_ascii_start())
}

/// The user and password a token holds.
fn credentials(token: &[u8]) -> Option<(String, Vec<u8>)> {
    let raw = base64::engine::general_purpose::STANDARD
        .decode(token)
        .ok()?;
    let colon = raw.iter().position(|&b| b == b':')?;
    let user = std::str::from_utf8(&raw[..colon]).ok()?.to_string();
    Some((user, raw[colon + 1..].to_vec()))
}

impl Users {
    fn digest(&self, token: &[u8]) -> Digest {
        let mut keyed = self.keyed.clone();
        keyed.update(token);
        Digest(keyed.finalize().into())
    }

    /// The user whose token has this digest, if verified within [`CACHE_TTL`] of `now`.
    /// Found by its digest: equal, so no comparison is left to time.
    fn remembered(&self, digest: &Digest, now: Instant) -> Option<User> {
        let cache = self.cache.lock().unwrap();
        let r = cache.known.get(digest)?;
        (r.until > now).then(|| r.user.clone())
    }

    /// The user `token` lets in, from the cache or verified now.
    async fn check(&self, token: &[u8]) -> Checked {
        let digest = self.digest(token);
        let generation = self.generation.load(Relaxed);
        let verdict = {
            let mut cache = self.cache.lock().unwrap();
            if let Some(r) = cache.known.get(&digest) {
                if r.until > Instant::now() {
                    return Checked::Let(r.user.clone());
                }
            }
            cache.verifying.entry(digest).or_default().clone()
        };
        // If the client whose check runs it leaves, one of those waiting takes over.
        verdict
            .get_or_init(|| self.verify(token, digest, generation))
            .await
            .clone()
    }

    /// Verifies `token` (off the runtime, at most one per CPU at a time, at most
    /// [`PENDING_PER_VERIFIER`] each waiting) and remembers a success, unless the users
    /// changed since `generation`.
    async fn verify(&self, token: &[u8], digest: Digest, generation: u64) -> Checked {
        let checked = match Pending::take(&self.pending, self.max_pending) {
            Some(_pending) => match self.verify_now(token).await {
                Some(user) => Checked::Let(user),
                None => Checked::Refused,
            },
            None => Checked::Busy,
        };
        let mut cache = self.cache.lock().unwrap();
        cache.verifying.remove(&digest);
        let Checked::Let(user) = checked else {
            return checked;
        };
        if self.generation.load(Relaxed) == generation {
            if cache.known.len() >= CACHE_MAX {
                let now = Instant::now();
                cache.known.retain(|_, r| r.until > now);
                if cache.known.len() >= CACHE_MAX {
                    cache.known.clear();
                }
            }
            let remembered = Remembered {
                user: user.clone(),
                until: Instant::now() + CACHE_TTL,
            };
            cache.known.insert(digest, remembered);
        }
        Checked::Let(user)
    }

    async fn verify_now(&self, token: &[u8]) -> Option<User> {
        let (name, password) = credentials(token)?;
        let hash = self.hashes.load().get(&name).cloned();
        let permit = self.verifiers.clone().acquire_owned().await.ok()?;
        // The permit goes with the work: a client that leaves does not free the slot
        // before the CPU is done.
        let scheme = match &hash {
            Some((Scheme::Bcrypt, _)) => "bcrypt",
            Some((Scheme::Argon2, _)) => "argon2",
            None => "no such user",
        };
        let ok = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            verify(hash, &password)
        })
        .await
        .unwrap_or(false);
        // Once per new credentials (then cached): what the CPU went to, and failed logins.
        let verdict = if ok { "accepted" } else { "refused" };
        info!(
            filter = %self.filter,
            "basic_auth: password of {name:?} {verdict} ({scheme})"
        );
        ok.then(|| User {
            value: statics::value(&name),
            name: name.into(),
        })
    }

    /// Takes a new list of users: remembered successes are forgotten.
    fn replace(&self, list: Vec<htpasswd::User>) {
        let mut cache = self.cache.lock().unwrap();
        self.hashes.store(Arc::new(by_name(list)));
        self.generation.fetch_add(1, Relaxed);
        // Verifications under way finish for those already waiting; later checks start anew.
        *cache = Cache::default();
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
        let read = |h: &HeaderMap| {
            only_one(&mut h.clone(), AUTHORIZATION)
                .as_ref()
                .and_then(|v| token(v).and_then(credentials))
        };
        assert_eq!(
            read(&basic("alice:pa:ss")),
            Some(("alice".to_string(), b"pa:ss".to_vec()))
        );
        assert_eq!(read(&basic("nocolon")), None);
        let mut h = HeaderMap::new();
        h.insert(AUTHORIZATION, "Bearer abc".parse().unwrap());
        assert_eq!(read(&h), None);
        let mut two = basic("a:b");
        two.append(AUTHORIZATION, "Basic YTpi".parse().unwrap());
        assert_eq!(read(&two), None);
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
