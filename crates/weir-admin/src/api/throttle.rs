//! Slowing down guessing of the admin token, per source address (docs/API.md, Security).
//!
//! After [`FREE`] wrong tokens in a row from one source, the requests of that source that
//! need the token are refused (429) without being checked, for a backoff that doubles with
//! each further wrong token, from [`FIRST`] up to [`CAP`]: a guesser gets a few tries, then
//! about one a minute. A right token clears its source; a source quiet for [`FORGET`] after
//! its last wrong token (and its backoff) starts afresh. At most [`MAX_SOURCES`] are
//! remembered, the longest quiet forgotten first (and counted), so any number of sources
//! takes bounded memory. Each source's failures are logged with their counts, at most one
//! line per source every [`LOG_EVERY`]: the first when it starts failing, the rest summed up
//! ([`Throttle::flush`] writes what an interval held back).

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tracing::warn;
use weir_metrics::admin_auth;

/// Wrong tokens in a row a source may send before it is slowed down.
pub const FREE: u32 = 5;
/// The first backoff, doubled with each further wrong token...
pub const FIRST: Duration = Duration::from_secs(1);
/// ...up to this.
pub const CAP: Duration = Duration::from_secs(60);
/// A source this long without a wrong token, after its backoff ran out, starts afresh.
pub const FORGET: Duration = Duration::from_secs(60);
/// At most one log line per source this often.
pub const LOG_EVERY: Duration = Duration::from_secs(10);
/// How often the lines held back are written (each source still gets at most one line
/// every [`LOG_EVERY`]).
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// The most sources remembered (about 100 bytes each).
pub const MAX_SOURCES: usize = 4096;

/// Where attempts come from: an IPv4 address, or an IPv6 /64 (a host commonly has a whole
/// /64 to pick addresses from).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Source(IpAddr);

impl Source {
    pub fn of(ip: IpAddr) -> Source {
        match ip.to_canonical() {
            IpAddr::V6(v6) => Source(IpAddr::V6((u128::from(v6) & !(u64::MAX as u128)).into())),
            v4 => Source(v4),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            IpAddr::V4(a) => write!(f, "{a}"),
            IpAddr::V6(a) => write!(f, "{a}/64"),
        }
    }
}

#[derive(Debug)]
struct Entry {
    /// Wrong tokens in a row.
    wrong: u32,
    /// Until when its attempts are refused unchecked.
    until: Option<Instant>,
    /// Its last wrong token.
    last: Instant,
    /// Not logged yet: wrong tokens, and attempts refused unchecked.
    pending_wrong: u64,
    pending_refused: u64,
    /// Its last log line.
    logged: Option<Instant>,
}

impl Entry {
    fn blocked(&self, now: Instant) -> Option<Duration> {
        self.until
            .and_then(|u| u.checked_duration_since(now))
            .filter(|d| !d.is_zero())
    }

    /// Quiet long enough to start afresh.
    fn forgotten(&self, now: Instant) -> bool {
        let since = self.until.map_or(self.last, |u| u.max(self.last));
        now.saturating_duration_since(since) >= FORGET
    }

    /// Nothing to remember: nothing to log, no wrong token that counts, and no line lately
    /// (which the next line of this source must stay [`LOG_EVERY`] away from).
    fn idle(&self, now: Instant) -> bool {
        self.pending_wrong == 0
            && self.pending_refused == 0
            && (self.wrong == 0 || self.forgotten(now))
            && self
                .logged
                .is_none_or(|t| now.saturating_duration_since(t) >= LOG_EVERY)
    }

    /// The line to log now, if one is due (never two within [`LOG_EVERY`]).
    fn line(&mut self, source: Source, now: Instant) -> Option<String> {
        if self.pending_wrong == 0 && self.pending_refused == 0 {
            return None;
        }
        if self
            .logged
            .is_some_and(|t| now.saturating_duration_since(t) < LOG_EVERY)
        {
            return None;
        }
        let since = match self.logged {
            None => String::new(),
            Some(t) => format!(
                " in the last {} s",
                now.saturating_duration_since(t).as_secs()
            ),
        };
        let s = |n: u64| if n == 1 { "" } else { "s" };
        let mut line = format!(
            "admin API: wrong bearer tokens from {source}: {} checked and wrong, {} attempt{} \
             refused unchecked{since}; {} wrong in a row",
            self.pending_wrong,
            self.pending_refused,
            s(self.pending_refused),
            self.wrong,
        );
        if let Some(d) = self.blocked(now) {
            line.push_str(&format!(
                "; its attempts are refused for another {} s",
                secs(d)
            ));
        }
        self.pending_wrong = 0;
        self.pending_refused = 0;
        self.logged = Some(now);
        Some(line)
    }
}

/// Whole seconds, rounded up (for Retry-After: never earlier than the backoff's end).
pub fn secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// The backoff after `wrong` wrong tokens in a row (`wrong` >= [`FREE`]).
fn backoff(wrong: u32) -> Duration {
    let doublings = (wrong - FREE).min(16);
    (FIRST * (1u32 << doublings)).min(CAP)
}

#[derive(Debug, Default)]
pub struct Throttle {
    sources: Mutex<HashMap<Source, Entry>>,
}

impl Throttle {
    /// Whether `source` may have a token checked now; if not, how long it is still refused.
    pub fn admit(&self, source: Source, now: Instant) -> Result<(), Duration> {
        let line = {
            let mut sources = self.sources.lock().unwrap();
            let Some(e) = sources.get_mut(&source) else {
                return Ok(());
            };
            let Some(left) = e.blocked(now) else {
                return Ok(());
            };
            e.pending_refused += 1;
            admin_auth::throttled();
            (e.line(source, now), left)
        };
        log(line.0);
        Err(line.1)
    }

    /// A wrong token from `source`.
    pub fn failed(&self, source: Source, now: Instant) {
        let line = {
            let mut sources = self.sources.lock().unwrap();
            if !sources.contains_key(&source) && sources.len() >= MAX_SOURCES {
                make_room(&mut sources, now);
            }
            let e = sources.entry(source).or_insert(Entry {
                wrong: 0,
                until: None,
                last: now,
                pending_wrong: 0,
                pending_refused: 0,
                logged: None,
            });
            if e.forgotten(now) {
                e.wrong = 0;
                e.until = None;
            }
            e.wrong += 1;
            e.last = now;
            e.pending_wrong += 1;
            if e.wrong >= FREE {
                e.until = Some(now + backoff(e.wrong));
            }
            admin_auth::wrong_token();
            e.line(source, now)
        };
        log(line);
    }

    /// A right token from `source`: it starts afresh (what is not logged yet still will be).
    pub fn succeeded(&self, source: Source, now: Instant) {
        let mut sources = self.sources.lock().unwrap();
        if let Some(e) = sources.get_mut(&source) {
            e.wrong = 0;
            e.until = None;
            if e.idle(now) {
                sources.remove(&source);
            }
        }
    }

    /// Logs what each source's last interval held back, once that interval is over, and
    /// forgets the sources with nothing left to remember. Called every [`FLUSH_EVERY`].
    pub fn flush(&self, now: Instant) {
        let lines: Vec<String> = {
            let mut sources = self.sources.lock().unwrap();
            let lines = sources
                .iter_mut()
                .filter_map(|(s, e)| e.line(*s, now))
                .collect();
            sources.retain(|_, e| !e.idle(now));
            lines
        };
        for l in lines {
            warn!("{l}");
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.sources.lock().unwrap().len()
    }
}

fn log(line: Option<String>) {
    if let Some(l) = line {
        warn!("{l}");
    }
}

/// Frees a place: the sources with nothing to remember, else the one quiet the longest
/// (its unlogged counts go with it; the metrics have them).
fn make_room(sources: &mut HashMap<Source, Entry>, now: Instant) {
    sources.retain(|_, e| !e.idle(now));
    if sources.len() < MAX_SOURCES {
        return;
    }
    if let Some(oldest) = sources.iter().min_by_key(|(_, e)| e.last).map(|(s, _)| *s) {
        sources.remove(&oldest);
        admin_auth::evicted();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(s: &str) -> Source {
        Source::of(s.parse().unwrap())
    }

    #[test]
    fn a_few_wrong_tokens_are_free_then_the_backoff_doubles_up_to_the_cap() {
        let t = Throttle::default();
        let (a, start) = (src("192.0.2.1"), Instant::now());
        for _ in 0..FREE - 1 {
            assert!(t.admit(a, start).is_ok());
            t.failed(a, start);
        }
        assert!(t.admit(a, start).is_ok());
        t.failed(a, start);
        assert_eq!(t.admit(a, start), Err(FIRST));
        // Each wrong token once its backoff ran out doubles the next one.
        let mut now = start;
        for want in [2, 4, 8, 16, 32, 60, 60] {
            now += CAP;
            assert!(t.admit(a, now).is_ok());
            t.failed(a, now);
            assert_eq!(t.admit(a, now), Err(Duration::from_secs(want)));
        }
        // Another source is not affected; a right token clears this one.
        assert!(t.admit(src("192.0.2.2"), now).is_ok());
        t.succeeded(a, now);
        assert!(t.admit(a, now).is_ok());
        t.failed(a, now);
        assert!(t.admit(a, now).is_ok(), "one wrong token after a right one");
    }

    #[test]
    fn a_source_quiet_for_a_while_starts_afresh() {
        let t = Throttle::default();
        let (a, start) = (src("192.0.2.1"), Instant::now());
        for _ in 0..FREE - 1 {
            t.failed(a, start);
        }
        let later = start + FORGET;
        t.failed(a, later);
        assert!(
            t.admit(a, later).is_ok(),
            "one wrong token after a quiet minute"
        );
    }

    #[test]
    fn an_ipv6_source_is_its_slash_64() {
        assert_eq!(src("2001:db8::1"), src("2001:db8::ffff:1"));
        assert_ne!(src("2001:db8::1"), src("2001:db8:0:1::1"));
        assert_eq!(src("::ffff:192.0.2.1"), src("192.0.2.1"));
        assert_eq!(src("2001:db8::1").to_string(), "2001:db8::/64");
    }

    #[test]
    fn memory_is_bounded_whatever_the_number_of_sources() {
        let t = Throttle::default();
        let now = Instant::now();
        for i in 0..(MAX_SOURCES as u32 + 1000) {
            let ip = std::net::Ipv4Addr::from(0x0a00_0000 + i);
            t.failed(Source::of(ip.into()), now);
        }
        assert_eq!(t.len(), MAX_SOURCES);
        // Once quiet and logged, they are forgotten.
        t.flush(now + FORGET + LOG_EVERY);
        t.flush(now + FORGET + 2 * LOG_EVERY);
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn lines_are_rate_limited_per_source_and_sum_what_they_held_back() {
        let t = Throttle::default();
        let (a, start) = (src("192.0.2.1"), Instant::now());
        let mut lines = 0;
        let mut now = start;
        for i in 0..3000u32 {
            now = start + Duration::from_millis(u64::from(i) * 10);
            let mut sources = t.sources.lock().unwrap();
            let e = sources.entry(a).or_insert(Entry {
                wrong: 0,
                until: None,
                last: now,
                pending_wrong: 0,
                pending_refused: 0,
                logged: None,
            });
            e.pending_refused += 1;
            lines += usize::from(e.line(a, now).is_some());
        }
        // 30 s of attempts: the first line, then one every LOG_EVERY.
        assert_eq!(
            lines,
            1 + (now - start).as_secs() as usize / LOG_EVERY.as_secs() as usize
        );
    }
}
