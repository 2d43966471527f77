//! PINGs on an upstream HTTP/2 connection (a pool's `ping_interval` and `ping_timeout`):
//! how weir finds a connection nobody serves any more (the endpoint's host died without a
//! FIN, its process hung, a NAT or firewall on the way silently dropped the flow). TCP
//! alone says nothing there until its retransmissions give up, many minutes later, and
//! meanwhile the connection takes new streams and holds the ones it has.
//!
//! Any byte from the endpoint shows it alive, so a connection in use sends no PING; one
//! that has read nothing for the interval sends one, and one that then reads nothing for
//! the timeout is dead. The driver (`client.rs`) calls [`Keepalive::heard`] for each read
//! (a counter and a clock read, beside a read's system call) and polls
//! [`Keepalive::poll`], whose one timer is re-armed only when it fires, never per read.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// A pool's PING settings, and where its connections given up are counted
/// (`weir_upstream_ping_timeouts_total`).
#[derive(Debug, Clone)]
pub struct Ping {
    pub interval: Duration,
    pub timeout: Duration,
    pub dead: Arc<AtomicU64>,
}

/// What the timer says is due.
#[derive(Debug, PartialEq, Eq)]
pub enum Due {
    /// Send a PING.
    Ping,
    /// Nothing arrived within the timeout after the PING: the connection is dead.
    Dead,
}

pub struct Keepalive {
    ping: Ping,
    timer: Pin<Box<Sleep>>,
    /// Reads so far, and when the last was.
    reads: u64,
    last_read: Instant,
    /// While a PING is out: `reads` when it went.
    out: Option<u64>,
}

impl Keepalive {
    pub fn new(ping: Ping) -> Keepalive {
        Keepalive {
            timer: Box::pin(tokio::time::sleep(ping.interval)),
            ping,
            reads: 0,
            last_read: Instant::now(),
            out: None,
        }
    }

    /// Bytes arrived from the endpoint.
    #[inline]
    pub fn heard(&mut self) {
        self.reads += 1;
        self.last_read = Instant::now();
    }

    pub fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Due> {
        loop {
            if self.timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            let now = Instant::now();
            if let Some(at) = self.out {
                if self.reads == at {
                    self.ping.dead.fetch_add(1, Relaxed);
                    return Poll::Ready(Due::Dead);
                }
                self.out = None;
            }
            let quiet = now.saturating_duration_since(self.last_read);
            match self.ping.interval.checked_sub(quiet) {
                // Heard from within the interval: look again when it would end.
                Some(left) if !left.is_zero() => self.timer.as_mut().reset(now + left),
                _ => {
                    self.out = Some(self.reads);
                    self.timer.as_mut().reset(now + self.ping.timeout);
                    return Poll::Ready(Due::Ping);
                }
            }
        }
    }

    pub fn timeout(&self) -> Duration {
        self.ping.timeout
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ping() -> Ping {
        Ping {
            interval: Duration::from_secs(30),
            timeout: Duration::from_secs(10),
            dead: Arc::default(),
        }
    }

    async fn next(k: &mut Keepalive) -> Due {
        std::future::poll_fn(|cx| k.poll(cx)).await
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_connection_is_pinged_then_found_dead() {
        let p = ping();
        let mut k = Keepalive::new(p.clone());
        let start = Instant::now();
        assert_eq!(next(&mut k).await, Due::Ping);
        assert!(start.elapsed() >= Duration::from_secs(30));
        assert_eq!(p.dead.load(Relaxed), 0);
        assert_eq!(next(&mut k).await, Due::Dead);
        assert!(start.elapsed() >= Duration::from_secs(40));
        assert_eq!(p.dead.load(Relaxed), 1, "counted");
    }

    #[tokio::test(start_paused = true)]
    async fn bytes_within_the_interval_put_the_ping_off() {
        let mut k = Keepalive::new(ping());
        let start = Instant::now();
        tokio::time::sleep(Duration::from_secs(20)).await;
        k.heard();
        assert_eq!(next(&mut k).await, Due::Ping);
        assert!(
            start.elapsed() >= Duration::from_secs(50),
            "{:?}",
            start.elapsed()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_to_the_ping_keeps_it_alive() {
        let mut k = Keepalive::new(ping());
        assert_eq!(next(&mut k).await, Due::Ping);
        k.heard();
        // The next PING after another interval of silence, not a death.
        assert_eq!(next(&mut k).await, Due::Ping);
        k.heard();
        assert_eq!(next(&mut k).await, Due::Ping);
    }
}
