//! The no-runtime route's I/O drivers:
//! current-thread runtimes, one per CPU, that the calls with no runtime drive themselves
//! while they wait, each with a backstop thread that drives it when no call has for a grace.
//!
//! A call picks a driver (the one its thread used last, unless a call is inside it and
//! another driver is free) and polls its future on its own thread with that driver's handle
//! entered. Between two polls it waits for its future's waker, driving the runtime if it is
//! its turn (see `gate.rs`): inside the runtime's `block_on` of its own wake flag, it sleeps
//! in the reactor itself, so a readiness event wakes the thread that waits for it, with no
//! wake-up across threads. With several calls on a driver, one drives for all (the others
//! are woken by it, and one of them takes the turn when it stops); they wait on their own
//! flags, on their own threads, so a time limit is each call's own.
//!
//! A future that woke itself during its poll (`yield_now`, a `select!` loop with an
//! always-ready branch, a `JoinHandle` polled by hand) gets what tokio's own `block_on` gives
//! it: before the next poll, the driver runs its ready tasks and turns its I/O and timer
//! driver once, without blocking (`block_on` of a `yield_now`, which tokio defers until
//! after that turn).
//!
//! The future is polled outside the runtime's `block_on`: a poll that blocks holds no core,
//! sync code in the future may start a runtime of its own, and a call nested in it takes this
//! route too (the thread is marked while it polls, see `context::outside_on`).
//!
//! Tasks a call spawns (a pooled client's connection drivers) stay on its driver's runtime,
//! which the backstop drives when the turn has been free for [`GRACE`].

mod gate;

use crate::context::Outside;
use crate::shutdown::classify;
use bridge_core::Error;
use gate::{Gate, Take, WakeFlag};
use std::cell::Cell;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use tokio::runtime::{Builder, Id, Runtime};

/// How long a driver's turn stays free, with no call waiting for it, before the backstop
/// takes it and drives the runtime: a task spawned by a call (a pooled client's connection)
/// waits at most about this long for its next poll once calls stop. Calls that follow each
/// other closer than this never wake the backstop; while calls keep coming, the backstop
/// looks once a grace (200 short wake-ups a second). Fixed: the same on every machine.
pub(crate) const GRACE: Duration = Duration::from_millis(5);

/// One driver: a current-thread runtime and its hand-over state.
#[derive(Debug)]
struct Driver {
    runtime: Runtime,
    id: Id,
    gate: Gate,
}

/// The drivers, one per CPU, started at the first call; `None` if not one could be started
/// (no runtime, no thread: the calls then take the I/O runtime's route, `Shared`).
fn drivers() -> Option<&'static [&'static Driver]> {
    static DRIVERS: OnceLock<Box<[&'static Driver]>> = OnceLock::new();
    let drivers = DRIVERS.get_or_init(|| {
        // Calls nested in a driver's tasks and calls at thread exit hand off to the I/O
        // runtime: build it now, never first in a thread-local destructor.
        let _ = crate::io_runtime::IoRuntime::global();
        let n = std::thread::available_parallelism().map_or(1, usize::from);
        (0..n).filter_map(|_| start().ok()).collect()
    });
    (!drivers.is_empty()).then_some(&**drivers)
}

/// Builds a driver and starts its backstop. A driver whose backstop could not start is
/// left unused (and stays allocated: the OS refused a thread, which is rare and final).
fn start() -> std::io::Result<&'static Driver> {
    let runtime = Builder::new_current_thread().enable_all().build()?;
    let id = runtime.handle().id();
    let driver: &'static Driver = Box::leak(Box::new(Driver {
        runtime,
        id,
        gate: Gate::new(),
    }));
    std::thread::Builder::new()
        .name("bridge-io-driver".into())
        .spawn(move || driver.backstop())?;
    Ok(driver)
}

thread_local! {
    /// The driver this thread used last (`usize::MAX`: none yet).
    static PREFERRED: Cell<usize> = const { Cell::new(usize::MAX) };


    /// This thread's wake flag and its waker, lent to one call at a time (a nested call
    /// makes its own).
    static LEASE: Cell<Option<(Arc<WakeFlag>, Waker)>> = const { Cell::new(None) };
}

/// Runs `future` on a driver, or returns it if there is none.
pub(crate) fn run<F: Future>(
    future: F,
    deadline: Option<Instant>,
) -> Result<Result<F::Output, Error>, F> {
    match drivers().and_then(pick) {
        Some(driver) => Ok(driver.run(future, deadline)),
        None => Err(future),
    }
}

/// The driver this thread used last if no call is inside it, else one with no call inside
/// (which becomes this thread's), else this thread's. Never the driver that a call further
/// up this thread's stack is inside: the nested call would wait in the line of its own
/// caller, which cannot move until it returns. Such a call takes another driver, free or
/// not; with no other driver, none (it is then polled here, the I/O runtime driving its I/O).
fn pick(drivers: &'static [&'static Driver]) -> Option<&'static Driver> {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let mine = crate::context::outside();
    let usable = |d: &&Driver| Some(d.id) != mine;
    let mut k = PREFERRED.try_with(Cell::get).unwrap_or(usize::MAX);
    if k >= drivers.len() {
        // ORDERING: Relaxed: spreads threads over the drivers; nothing is published.
        k = NEXT.fetch_add(1, Ordering::Relaxed) % drivers.len();
    }
    if drivers[k].gate.inside() > 0 || !usable(&drivers[k]) {
        let free = drivers
            .iter()
            .position(|d| d.gate.inside() == 0 && usable(d));
        let other = || drivers.iter().position(&usable);
        k = free
            .or_else(|| usable(&drivers[k]).then_some(k))
            .or_else(other)?;
    }
    let _ = PREFERRED.try_with(|preferred| preferred.set(k));
    Some(drivers[k])
}

/// Lends this thread's wake flag to one call, and takes it back when dropped.
struct FlagLease(Option<(Arc<WakeFlag>, Waker)>);

impl FlagLease {
    fn take() -> Self {
        let lent = LEASE.try_with(Cell::take).ok().flatten();
        Self(Some(lent.unwrap_or_else(|| {
            let flag = Arc::new(WakeFlag::new());
            let waker = Waker::from(Arc::clone(&flag));
            (flag, waker)
        })))
    }

    fn parts(&self) -> (&Arc<WakeFlag>, &Waker) {
        let (flag, waker) = self.0.as_ref().expect("lent until dropped");
        (flag, waker)
    }
}

impl Drop for FlagLease {
    fn drop(&mut self) {
        // At thread exit the slot may be gone: the flag is then dropped with the lease.
        let _ = LEASE.try_with(|slot| slot.set(self.0.take()));
    }
}

impl Driver {
    /// The backstop: drives the runtime whenever its turn has been free for a grace, until
    /// a call waits for the turn.
    fn backstop(&self) {
        let mut seen = 0;
        loop {
            self.gate.wait_turn(&mut seen, GRACE);
            self.runtime.block_on(self.gate.held());
            self.gate.release();
        }
    }

    /// Runs `future` to completion (or until `deadline`, then [`Error::TimedOut`])
    /// on this thread, driving this driver's runtime between polls when it is this call's
    /// turn, and waiting on its own flag otherwise.
    fn run<F: Future>(&self, future: F, deadline: Option<Instant>) -> Result<F::Output, Error> {
        let lease = FlagLease::take();
        let (flag, waker) = lease.parts();
        // Out of the line (and the turn handed on) however the call ends.
        let _leave = Leave(&self.gate, flag);
        let mut cx = Context::from_waker(waker);
        // Entered for the whole call, so that the future is dropped (at its deadline, or
        // after a panic) where it was polled.
        let _context = self.runtime.handle().enter();
        let mut future = pin!(future);
        let mut warned = false;
        loop {
            let polled = {
                let _outside = Outside::set(Some(self.id));
                panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut cx)))
            };
            match polled {
                Ok(Poll::Ready(output)) => return Ok(output),
                Ok(Poll::Pending) => {}
                Err(payload) => return Err(classify(payload)),
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return Err(Error::__timed_out(false));
            }
            match self.gate.take(flag) {
                Take::Drive => {
                    let driven = self.drive(flag, deadline);
                    self.gate.release();
                    match driven {
                        Ok(true) => {}
                        Ok(false) => {
                            return Err(Error::__timed_out(false));
                        }
                        Err(payload) => return Err(classify(payload)),
                    }
                }
                Take::Wait(turns) => {
                    if !self.wait(flag, deadline, turns, &mut warned) {
                        return Err(Error::__timed_out(false));
                    }
                }
            }
        }
    }

    /// Drives the runtime, holding the turn, until `flag` is set (`Ok(true)`) or `deadline`
    /// passes (`Ok(false)`); a panic out of the runtime is returned. A flag set already (the
    /// future woke itself during its poll) gets one turn of the runtime without blocking:
    /// its ready tasks run and its I/O and timers are looked at, as in tokio's `block_on`.
    fn drive(
        &self,
        flag: &WakeFlag,
        deadline: Option<Instant>,
    ) -> Result<bool, Box<dyn std::any::Any + Send>> {
        let _outside = Outside::set(None);
        panic::catch_unwind(AssertUnwindSafe(|| {
            if flag.take() {
                self.runtime.block_on(tokio::task::yield_now());
                return true;
            }
            match deadline {
                None => {
                    self.runtime.block_on(flag.wait());
                    true
                }
                Some(deadline) => self.runtime.block_on(async {
                    tokio::time::timeout_at(deadline.into(), flag.wait())
                        .await
                        .is_ok()
                }),
            }
        }))
    }

    /// Waits on this thread for `flag` (its future woke, or the turn was handed to it) until
    /// `deadline`: `false` if it passed. Another thread drives the runtime meanwhile, the
    /// holder of turn number `turns`; if it keeps the turn past the stall threshold (a task
    /// that blocks its thread inside the runtime), the call says so once.
    fn wait(
        &self,
        flag: &WakeFlag,
        deadline: Option<Instant>,
        turns: u64,
        warned: &mut bool,
    ) -> bool {
        if flag.take() {
            // Woken already (most likely by its own poll): the holder of the turn runs the
            // tasks and turns the I/O meanwhile, so give it the CPU before polling again,
            // as bridge-core's `block_on` does for a future that woke itself.
            std::thread::yield_now();
            return true;
        }
        if !*warned {
            let threshold = bridge_core::__config::stall_warning();
            if let Some(stall_at) = Instant::now().checked_add(threshold) {
                if deadline.is_none_or(|deadline| stall_at < deadline) {
                    if flag.wait_blocking(Some(stall_at)) {
                        return true;
                    }
                    if !self.gate.moved_since(turns) {
                        *warned = true;
                        driver_held(threshold);
                    }
                }
            }
        }
        flag.wait_blocking(deadline)
    }
}

/// Takes the call out of its driver's line when it ends, however it ends.
struct Leave<'a>(&'a Gate, &'a Arc<WakeFlag>);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.0.leave(self.1);
    }
}

/// A call with no time limit, made with no runtime, waited past `threshold` for its driver
/// while one holder kept the driver's turn all along: count it, and warn once.
#[cold]
#[inline(never)]
fn driver_held(threshold: Duration) {
    crate::metrics::stalled_driver();
    #[cfg(not(feature = "tracing"))]
    let _ = threshold;
    #[cfg(feature = "tracing")]
    tracing::warn!(
        waited = ?threshold,
        "run_blocking: a call made with no runtime is still waiting for one of the bridge's \
         I/O drivers, whose thread has been held by the same poll all along: most likely a \
         task on that driver blocks its thread (a sync call, a lock or long CPU work inside \
         a task spawned from a run_blocking future), and no I/O or timer of that driver runs \
         meanwhile. Move the blocking work out of the task (tokio::task::spawn_blocking, \
         bridge::spawn), or bound the call with try_run_blocking_timeout"
    );
}
