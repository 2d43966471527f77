//! Two futures raced in one task, each polled only when it was woken.
//!
//! A TCP session or an upgraded connection's relay is a busy future (woken
//! at every read) beside watchers that almost never fire (kill, an
//! endpoint's cut). (An HTTP connection has no watcher of its own: its
//! listener's `http/watch.rs` wakes it.)
//! `select!` would poll every watcher on every wake-up, which costs a few
//! mutex operations each (cancellation tokens); here each side gets a
//! waker that notes it fired, so a wake-up polls only its own side. Both
//! wakers share one small allocation (a connection keeps it all its life).

use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

/// Which side was woken since its last poll, and the task to wake. Both sides' wakers
/// point here (one allocation per race: a connection holds one as long as it lives).
struct Flags {
    fired: [AtomicBool; 2],
    task: Waker,
}

const MAIN: usize = 0;
const WATCH: usize = 1;

/// A side's waker: the `Flags` pointer with the side in its lowest bit (`Flags` is
/// aligned to 8), owning one count of the `Arc`.
static SIDE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, release);

fn flags_of(p: *const ()) -> (*const Flags, usize) {
    ((p as usize & !1) as *const Flags, p as usize & 1)
}

unsafe fn clone(p: *const ()) -> RawWaker {
    // SAFETY: `p` is a side waker's: its `Arc` lives while the waker does.
    unsafe { Arc::increment_strong_count(flags_of(p).0) };
    RawWaker::new(p, &SIDE)
}

unsafe fn wake(p: *const ()) {
    // SAFETY: as `wake_by_ref`, then the waker's own count is given back.
    unsafe {
        wake_by_ref(p);
        release(p);
    }
}

unsafe fn wake_by_ref(p: *const ()) {
    let (flags, side) = flags_of(p);
    // SAFETY: the waker holds a count (or borrows one held by the race).
    let flags = unsafe { &*flags };
    flags.fired[side].store(true, Ordering::Release);
    flags.task.wake_by_ref();
}

unsafe fn release(p: *const ()) {
    // SAFETY: the count this waker owned.
    unsafe { Arc::decrement_strong_count(flags_of(p).0) };
}

impl Flags {
    fn new(task: &Waker) -> Arc<Flags> {
        const _: () = assert!(std::mem::align_of::<Flags>() >= 2);
        Arc::new(Flags {
            fired: [AtomicBool::new(true), AtomicBool::new(true)],
            task: task.clone(),
        })
    }

    /// Polls `f`, the race's `side`, if that side was woken since its last poll.
    fn poll<F: Future>(self: &Arc<Self>, side: usize, f: Pin<&mut F>) -> Poll<F::Output> {
        if !self.fired[side].swap(false, Ordering::AcqRel) {
            return Poll::Pending;
        }
        let p = (Arc::as_ptr(self) as usize | side) as *const ();
        // SAFETY: a borrowed waker: never dropped, it gives back no count, and the race's
        // `Arc` outlives the poll; a clone of it takes a count of its own.
        let waker = ManuallyDrop::new(unsafe { Waker::from_raw(RawWaker::new(p, &SIDE)) });
        f.poll(&mut Context::from_waker(&waker))
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
        flags: Option<Arc<Flags>>,
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
        flags: None,
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
            .flags
            .as_ref()
            .is_some_and(|f| f.task.will_wake(cx.waker()))
        {
            *this.flags = Some(Flags::new(cx.waker()));
        }
        let f = this.flags.as_ref().expect("set above");
        if f.poll(MAIN, this.main).is_ready() || f.poll(WATCH, this.watch).is_ready() {
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
