//! The no-runtime route's I/O drivers ([`InlineStrategy::Drive`](crate::InlineStrategy)):
//! current-thread runtimes, one per CPU, that the calls with no runtime drive themselves
//! while they wait, each with a backstop thread that drives it when no call does.
//!
//! A call picks a driver (the one its thread used last, unless a call is inside it and
//! another driver is free), polls its future on its own thread with that driver's handle
//! entered, and between two polls drives the driver's runtime (`Runtime::block_on` of its
//! own wake flag) until its future's waker is called. With one call on a driver, that call
//! sleeps in the reactor itself, as with a runtime of its own: a readiness event wakes the
//! thread that waits for it, with no wake-up across threads. With several, tokio gives the
//! core to one of them, which drives the reactor for all (the others are woken by it), and
//! hands it on when it stops.
//!
//! The future is polled outside the runtime's `block_on`: the core is free while it runs, so
//! a poll that blocks stalls no other call, sync code in the future may start a runtime of
//! its own, and a call nested in it takes this route too (the thread is marked while it
//! polls, see [`outside_on`]).
//!
//! Tasks a call spawns (a pooled client's connection drivers) stay on its driver's runtime,
//! which the backstop drives when no call has for a grace ([`grace`]); a call that arrives
//! takes the core back from it (see `gate.rs`).

use crate::BridgeError;
use crate::gate::{Flag, Gate};
use crate::shutdown::classify;
use std::cell::Cell;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use tokio::runtime::{Builder, Handle, Id, Runtime};

/// tokio's panic when a thread's parker is gone (a thread-local destructor at thread exit)
/// and the core is held by another thread.
const PARKER_GONE: &str = "Failed to `Enter::block_on`";

/// The share of the time between two calls that the backstop's hand-back may cost (1/64;
/// its looks then cost at most half that share of a CPU): see [`grace`].
const HAND_BACK_SHARE: u32 = 64;

/// The longest grace: what a task spawned by a call waits at most, twice over, for its next
/// poll once calls stop, whatever a wake-up costs.
const GRACE_MAX: Duration = Duration::from_millis(5);

/// One driver: a current-thread runtime and its hand-over state.
#[derive(Debug)]
struct Driver {
    runtime: Runtime,
    id: Id,
    gate: Gate,
}

/// How long the backstop waits with no call inside and none arriving before it takes the
/// core back: `HAND_BACK_SHARE` times what a hand-back costs, two wake-ups (the backstop's,
/// then the caller's), by the backstops' measured wake-ups (`gate::BACKSTOP_WAKE_UPS`; before
/// the first hand-back, the handoff's wake-up estimate), at most [`GRACE_MAX`] (also before
/// any wake-up was measured).
///
/// Calls in a loop whose gaps are shorter never wake the backstop. Those with longer gaps
/// pay a hand-back each, which is then at most 1/64 of the gap; and while calls keep
/// coming, the backstop looks once a grace, a wake-up each, at most 1/128 of a CPU.
pub(crate) fn grace() -> Duration {
    crate::gate::BACKSTOP_WAKE_UPS
        .get()
        .or_else(bridge_core::__spin::wake_estimate)
        .map_or(GRACE_MAX, |wake| {
            wake.saturating_mul(2 * HAND_BACK_SHARE).min(GRACE_MAX)
        })
}

/// The drivers, one per CPU, started at the first call; `None` if not one could be started
/// (no runtime, no thread: the calls then take the I/O runtime's route, `Shared`).
fn drivers() -> Option<&'static [&'static Driver]> {
    static DRIVERS: OnceLock<Box<[&'static Driver]>> = OnceLock::new();
    let drivers = DRIVERS.get_or_init(|| {
        // Calls nested in a driver's tasks and calls at thread exit hand off to the I/O
        // runtime: build it now, never first in a thread-local destructor.
        let _ = crate::IoRuntime::global();
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

    /// The driver whose handle a call polls its future with on this thread, while it polls.
    static OUTSIDE: Cell<Option<Id>> = const { Cell::new(None) };

    /// This thread's wake flag and its waker, lent to one call at a time (a nested call
    /// makes its own).
    static LEASE: Cell<Option<(Arc<Flag>, Waker)>> = const { Cell::new(None) };
}

/// Whether a call on this thread polls its future with `handle` entered, a driver's,
/// outside its `block_on`: a call nested there (not in a runtime the future started) has
/// no runtime of its own and takes this route again.
pub(crate) fn outside_on(handle: &Handle) -> bool {
    OUTSIDE
        .try_with(Cell::get)
        .is_ok_and(|outside| outside == Some(handle.id()))
}

/// Sets [`OUTSIDE`] until dropped, then puts back what it was.
struct Outside(Option<Id>);

impl Outside {
    fn set(id: Option<Id>) -> Self {
        Self(
            OUTSIDE
                .try_with(|outside| outside.replace(id))
                .unwrap_or(id),
        )
    }
}

impl Drop for Outside {
    fn drop(&mut self) {
        let _ = OUTSIDE.try_with(|outside| outside.set(self.0));
    }
}

/// Runs `future` on a driver, or returns it if there is none.
pub(crate) fn run<F: Future>(
    future: F,
    deadline: Option<Instant>,
) -> Result<Result<F::Output, BridgeError>, F> {
    match drivers() {
        Some(drivers) => Ok(pick(drivers).run(future, deadline)),
        None => Err(future),
    }
}

/// The driver this thread used last if no call is inside it, else one with no call inside
/// (which becomes this thread's), else this thread's.
fn pick(drivers: &'static [&'static Driver]) -> &'static Driver {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let mut k = PREFERRED.try_with(Cell::get).unwrap_or(usize::MAX);
    if k >= drivers.len() {
        // ORDERING: Relaxed: spreads threads over the drivers; nothing is published.
        k = NEXT.fetch_add(1, Ordering::Relaxed) % drivers.len();
    }
    if drivers[k].gate.inside() > 0 {
        if let Some(free) = drivers.iter().position(|d| d.gate.inside() == 0) {
            k = free;
        }
    }
    let _ = PREFERRED.try_with(|preferred| preferred.set(k));
    drivers[k]
}

/// Lends this thread's wake flag to one call, and takes it back when dropped.
struct Lease(Option<(Arc<Flag>, Waker)>);

impl Lease {
    fn take() -> Self {
        let lent = LEASE.try_with(Cell::take).ok().flatten();
        Self(Some(lent.unwrap_or_else(|| {
            let flag = Arc::new(Flag::new());
            let waker = Waker::from(Arc::clone(&flag));
            (flag, waker)
        })))
    }

    fn parts(&self) -> (&Flag, &Waker) {
        let (flag, waker) = self.0.as_ref().expect("lent until dropped");
        (flag, waker)
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // At thread exit the slot may be gone: the flag is then dropped with the lease.
        let _ = LEASE.try_with(|slot| slot.set(self.0.take()));
    }
}

impl Driver {
    /// The backstop: drives the runtime whenever no call has for a grace, until one
    /// arrives. A task a call spawned then waits at most two graces for its next poll.
    fn backstop(&self) {
        let mut seen = 0;
        loop {
            self.gate.wait_quiet(&mut seen, grace);
            self.runtime.block_on(self.gate.held());
        }
    }

    /// Runs `future` to completion (or until `deadline`, then [`BridgeError::TimedOut`])
    /// on this thread, driving this driver's runtime between polls.
    fn run<F: Future>(
        &self,
        future: F,
        deadline: Option<Instant>,
    ) -> Result<F::Output, BridgeError> {
        let lease = Lease::take();
        let (flag, waker) = lease.parts();
        let mut cx = Context::from_waker(waker);
        // Entered for the whole call, so that the future is dropped (at its deadline, or
        // after a panic) where it was polled.
        let _context = self.runtime.handle().enter();
        let mut future = pin!(future);
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
                return Err(BridgeError::TimedOut(crate::Timeout::elapsed()));
            }
            self.gate.arrive();
            let driven = {
                let _outside = Outside::set(None);
                panic::catch_unwind(AssertUnwindSafe(|| match deadline {
                    None => {
                        self.runtime.block_on(flag.wait());
                        true
                    }
                    Some(deadline) => self.runtime.block_on(async {
                        tokio::time::timeout_at(deadline.into(), flag.wait())
                            .await
                            .is_ok()
                    }),
                }))
            };
            self.gate.leave();
            match driven {
                Ok(true) => {}
                Ok(false) => return Err(BridgeError::TimedOut(crate::Timeout::elapsed())),
                Err(payload)
                    if crate::shutdown::message(&*payload)
                        .is_some_and(|m| m.starts_with(PARKER_GONE)) =>
                {
                    // At thread exit tokio's parker may be gone while its context is not,
                    // and a call that waits for the core another thread holds cannot wait
                    // on it: the rest is polled on a wake flag of bridge-core's, the runtime
                    // driven by whoever holds its core (the backstop at worst).
                    return crate::in_place::drive(self.runtime.handle(), future, deadline);
                }
                Err(payload) => return Err(classify(payload)),
            }
        }
    }
}
