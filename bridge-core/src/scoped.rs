//! Running a closure that borrows from the caller's stack on another thread: the
//! lifetime-erased hand-off that lets `run_blocking` take borrowing futures on its handoff
//! route.
//!
//! bridge-tokio's handoff runs `run_blocking`'s borrowing futures with it. The one
//! `unsafe` step, erasing the closure's lifetime so that a thread pool can hold it, is sound
//! because [`run_elsewhere`] does not return, nor unwind, before the closure has either run
//! to its end or been dropped, as `std::thread::scope` waits for its threads.

use crate::oneshot::{self, Receiver, RecvTimeoutError, Sender};
use std::fmt;
use std::mem::ManuallyDrop;
use std::time::Instant;

/// A job's body: runs the closure, calls its argument, delivers the result.
type Body<'a> = Box<dyn FnOnce(&dyn Fn()) + Send + 'a>;

/// The closure of [`run_elsewhere`], with its lifetime erased: run it once, or drop it.
///
/// It gets a callback to call once its result is ready, before the result is delivered (a
/// pool uses it to put the worker back in its idle list first).
///
/// # Examples
///
/// A job dropped unrun (a pool that shut down) ends the caller's wait as `Closed`:
///
/// ```
/// use bridge_core::oneshot::RecvTimeoutError;
/// use bridge_core::scoped::run_elsewhere;
///
/// let text = String::from("borrowed");
/// let got = run_elsewhere(|| text.len(), drop, |pending| pending.recv_until(None));
/// assert_eq!(got, Err(RecvTimeoutError::Closed));
/// ```
pub struct Erased(Body<'static>);

impl Erased {
    /// Runs the closure to its end, then calls `before_delivery`, then delivers the result.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    ///
    /// let called = AtomicBool::new(false);
    /// let got = bridge_core::scoped::run_elsewhere(
    ///     || 2 + 2,
    ///     |job| job.run(&|| called.store(true, Ordering::Relaxed)),
    ///     |pending| pending.recv_until(None),
    /// );
    /// assert_eq!(got, Ok(4));
    /// assert!(called.load(Ordering::Relaxed));
    /// ```
    pub fn run(self, before_delivery: &dyn Fn()) {
        (self.0)(before_delivery);
    }
}

impl fmt::Debug for Erased {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Erased").finish_non_exhaustive()
    }
}

/// The closure and the sender of its result, dropped in that order.
struct Scoped<F, R> {
    f: ManuallyDrop<F>,
    tx: ManuallyDrop<Sender<R>>,
}

impl<F: FnOnce() -> R, R> Scoped<F, R> {
    fn run(self, before_delivery: &dyn Fn()) {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped (ManuallyDrop), so each field is taken exactly once,
        // here.
        let tx = unsafe { ManuallyDrop::take(&mut this.tx) };
        // SAFETY: as above.
        let f = unsafe { ManuallyDrop::take(&mut this.f) };
        // Locals drop in reverse order, `tx` last, on every path out of this frame. If `f`
        // panics, its captures are dropped while the panic leaves it, and `tx` after that, as
        // the unwinding leaves this frame; if `before_delivery` unwinds, the result goes
        // first, then `tx`: the channel closes only once the borrows are gone.
        let result = f();
        before_delivery();
        // The result may borrow from the caller too: it is the caller's to drop, in the
        // channel or once received. A refused send hands it back, and it is dropped here,
        // before `tx` closes the channel.
        drop(tx.send(result));
    }
}

impl<F, R> Drop for Scoped<F, R> {
    /// The job dropped unrun: the closure goes first, then the sender, whose drop closes the
    /// channel and so tells the caller that nothing borrowed is left.
    ///
    /// The sender is moved to a local first, so that it drops even if the closure's drop
    /// panics: the unwinding drops it as it leaves this frame, after the closure's captures
    /// (each of them is dropped, panic or not). Left in its `ManuallyDrop`, it would leak, and
    /// the caller would wait for its channel forever.
    fn drop(&mut self) {
        // SAFETY: `drop` runs once, and `run` (the other place that takes the fields) keeps
        // `self` from being dropped: the sender is taken exactly once, here.
        let tx = unsafe { ManuallyDrop::take(&mut self.tx) };
        // SAFETY: as above, for the closure.
        unsafe { ManuallyDrop::drop(&mut self.f) };
        drop(tx);
    }
}

/// Blocks, when dropped, until the job has sent its result or dropped its sender.
struct WaitForJob<R>(Option<Receiver<R>>);

impl<R> Drop for WaitForJob<R> {
    fn drop(&mut self) {
        if let Some(rx) = self.0.take() {
            // A result still in the channel (the caller stopped waiting for it) is dropped
            // here, while what it borrows is still alive.
            let _ = rx.recv_blocking();
        }
    }
}

/// The caller's view of the job's result channel while it waits: it can receive, but not
/// replace or drop the receiver (the wait for the job's end relies on it).
///
/// # Examples
///
/// See [`run_elsewhere`].
#[derive(Debug)]
pub struct Pending<'g, R>(&'g mut Receiver<R>);

impl<R> Pending<'_, R> {
    /// Waits for the result until `deadline` (`None`: for as long as it takes); `Closed`
    /// when the job was dropped unrun or its closure panicked.
    ///
    /// It parks at once, without the spin of `backoff`: the result is a whole job's, run on
    /// another thread that may first need a wake-up, so a spin seldom catches it; and where
    /// that thread shares this CPU (two threads that wake each other often end up on one),
    /// the spin holds the CPU the job needs. The worker's wait for its next job, where a
    /// caller in a loop comes back within microseconds, is the side that spins.
    ///
    /// # Errors
    ///
    /// As [`Receiver::recv_deadline`].
    ///
    /// # Examples
    ///
    /// ```
    /// use bridge_core::oneshot::RecvTimeoutError;
    /// use std::time::{Duration, Instant};
    ///
    /// let soon = Some(Instant::now() + Duration::from_millis(10));
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let got = bridge_core::scoped::run_elsewhere(
    ///     || 7,
    ///     |job| tx.send(job).unwrap(),
    ///     |pending| {
    ///         let first = pending.recv_until(soon);
    ///         // Nobody ran the job yet; it runs now, and the wait gets it.
    ///         rx.recv().unwrap().run(&|| ());
    ///         (first, pending.recv_until(None))
    ///     },
    /// );
    /// assert_eq!(got, (Err(RecvTimeoutError::Timeout), Ok(7)));
    /// ```
    pub fn recv_until(&mut self, deadline: Option<Instant>) -> Result<R, RecvTimeoutError> {
        self.0.recv_until_with(deadline, false)
    }

    /// Whether the result (or the channel's close) is there.
    ///
    /// # Examples
    ///
    /// ```
    /// let ready = bridge_core::scoped::run_elsewhere(
    ///     || 1,
    ///     |job| job.run(&|| ()),
    ///     |pending| pending.is_ready(),
    /// );
    /// assert!(ready);
    /// ```
    pub fn is_ready(&self) -> bool {
        self.0.is_ready()
    }
}

/// Runs `f` elsewhere and waits for it, letting `f` and its result borrow from this stack.
///
/// `hand_over` gets the closure as a [`Erased`] that may be sent to any thread; whoever holds it
/// must run it or drop it. `wait` then waits for the result on its receiver as it likes (with
/// a deadline, say, after which it may ask the job to stop). Whatever `wait` does, this
/// function returns (or unwinds) only once the job has run to its end or been dropped. If
/// the job is kept forever, neither run nor dropped, this call waits forever: nothing
/// borrowed is ever freed under it.
///
/// # Examples
///
/// ```
/// use bridge_core::scoped::run_elsewhere;
///
/// let text = String::from("borrowed");
/// let len = run_elsewhere(
///     || text.len(),
///     |job| drop(std::thread::spawn(move || job.run(&|| ()))),
///     |pending| pending.recv_until(None).ok(),
/// );
/// assert_eq!(len, Some(8));
/// ```
pub fn run_elsewhere<'a, F, R, W>(
    f: F,
    hand_over: impl FnOnce(Erased),
    wait: impl FnOnce(&mut Pending<'_, R>) -> W,
) -> W
where
    F: FnOnce() -> R + Send + 'a,
    R: Send + 'a,
{
    let (tx, rx) = oneshot::channel();
    let scoped = Scoped {
        f: ManuallyDrop::new(f),
        tx: ManuallyDrop::new(tx),
    };
    let job: Body<'a> = Box::new(move |before_delivery: &dyn Fn()| scoped.run(before_delivery));
    // The guard is in place before the job leaves this frame: from here on, a return or an
    // unwind first waits for the job.
    let mut guard = WaitForJob(Some(rx));
    // SAFETY: only the lifetime bound changes ('a to 'static); the layout of the box is the
    // same. The erased job is only ever run (`Erased::run`) or dropped, and `guard` keeps this
    // function from returning or unwinding until the job's channel is done, which happens
    // on each path only after the last use of anything the job borrows:
    // - run to its end: `f` has returned (its captures are gone) before `tx.send`, and the
    //   result is the caller's;
    // - run, and `f` panics: `f`'s captures are dropped while the panic leaves it, `tx`
    //   after them;
    // - dropped unrun (a pool that shut down, a thread that could not start): `Scoped::drop`
    //   drops `f` before `tx`, and `tx` even if `f`'s drop panics;
    // - kept forever: the guard waits forever, and nothing is freed.
    // `hand_over` or `wait` panicking only unwinds into the guard, which waits the same way.
    let job = Erased(unsafe { std::mem::transmute::<Body<'a>, Body<'static>>(job) });
    hand_over(job);
    let rx = guard
        .0
        .as_mut()
        .expect("the guard gives up its receiver only when dropped");
    wait(&mut Pending(rx))
}
