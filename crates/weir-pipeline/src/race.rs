//! Two futures raced in one task, each polled only when it was woken.
//!
//! A client connection or a TCP session is a busy future (woken a few times
//! per request) beside watchers that almost never fire (drain, kill, an
//! endpoint's cut, the timeout watchdog).
//! `select!` would poll every watcher on every wake-up, which costs a few
//! mutex operations each (cancellation tokens); here each side gets a
//! waker that notes it fired, so a wake-up polls only its own side.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// Notes that it fired, then wakes the task.
struct Flag {
    fired: AtomicBool,
    task: Waker,
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.fired.store(true, Ordering::Release);
        self.task.wake_by_ref();
    }
}

struct Side {
    flag: Arc<Flag>,
    waker: Waker,
}

impl Side {
    fn new(task: &Waker) -> Self {
        let flag = Arc::new(Flag {
            fired: AtomicBool::new(true),
            task: task.clone(),
        });
        Side {
            waker: Waker::from(flag.clone()),
            flag,
        }
    }

    /// Polls `f` if this side was woken since its last poll.
    fn poll<F: Future>(&self, f: Pin<&mut F>) -> Poll<F::Output> {
        if !self.flag.fired.swap(false, Ordering::AcqRel) {
            return Poll::Pending;
        }
        f.poll(&mut Context::from_waker(&self.waker))
    }
}

pin_project_lite::pin_project! {
    /// Runs `main` and `watch` until either finishes. A struct rather than
    /// an `async fn`: an `async fn` would keep its arguments and their
    /// pinned copies side by side, doubling the size of a connection's
    /// future (kilobytes, copied when the task is spawned).
    pub struct Race<M, W> {
        #[pin]
        main: M,
        #[pin]
        watch: W,
        sides: Option<(Side, Side)>,
    }
}

pub fn race<M, W>(main: M, watch: W) -> Race<M, W>
where
    M: Future<Output = ()>,
    W: Future<Output = ()>,
{
    Race {
        main,
        watch,
        sides: None,
    }
}

impl<M, W> Future for Race<M, W>
where
    M: Future<Output = ()>,
    W: Future<Output = ()>,
{
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        // New wakers only if the task's own changed (never, in a tokio
        // task): both sides are then polled once to register them.
        if !this
            .sides
            .as_ref()
            .is_some_and(|(m, _)| m.flag.task.will_wake(cx.waker()))
        {
            *this.sides = Some((Side::new(cx.waker()), Side::new(cx.waker())));
        }
        let (m, w) = this.sides.as_ref().expect("set above");
        if m.poll(this.main).is_ready() || w.poll(this.watch).is_ready() {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    /// Counts its polls; ready once told.
    struct Probe(Arc<AtomicU32>, Arc<AtomicBool>, Option<Waker>);

    impl Future for Probe {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            self.0.fetch_add(1, Ordering::Relaxed);
            if self.1.load(Ordering::Relaxed) {
                return Poll::Ready(());
            }
            self.2 = Some(cx.waker().clone());
            Poll::Pending
        }
    }

    #[tokio::test]
    async fn a_wake_up_polls_only_its_side() {
        let (busy, rare) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
        let done = Arc::new(AtomicBool::new(false));
        let notify = Arc::new(tokio::sync::Notify::new());
        let n = notify.clone();
        let b = busy.clone();
        let main = async move {
            for _ in 0..10 {
                n.notified().await;
                b.fetch_add(1, Ordering::Relaxed);
            }
        };
        let watch = Probe(rare.clone(), done.clone(), None);
        let task = tokio::spawn(race(main, watch));
        for _ in 0..10 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            notify.notify_one();
        }
        task.await.unwrap();
        assert_eq!(busy.load(Ordering::Relaxed), 10);
        // Polled once to register its waker, never again.
        assert_eq!(rare.load(Ordering::Relaxed), 1);
    }
}
