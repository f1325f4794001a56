//! Who drives an I/O driver when: the hand-over of a driver's core between the calls that
//! drive it while they wait and its backstop thread, which drives it when no call has for a
//! while (see `drivers.rs`), and the wake flag a driving call waits on.
//!
//! tokio's `Runtime::block_on` moves the core of a current-thread runtime between the
//! threads that call it; the gate is the part of the hand-over that is the bridge's. A call
//! that is about to drive (or wait for the core) [`arrive`](Gate::arrive)s, which wakes the
//! backstop if it holds the core: its [`held`](Gate::held) future then returns, and its
//! `block_on` gives the core up. The backstop takes the core back once
//! [`wait_quiet`](Gate::wait_quiet) has seen a whole grace pass with no call inside and none
//! arriving, so that calls in a loop never pay for its wake-ups. Both sides check and
//! register under one lock: an arrival is never missed by a backstop that holds the core.
//!
//! The gate's arms, each counted as `gate.<where>.<arm>` for the coverage count:
//!
//! | where | arm | what happens |
//! | --- | --- | --- |
//! | arrive | `wake_backstop` | the backstop holds the core: its waker is taken and called |
//! | arrive | `backstop_away` | the backstop does not hold the core: only counted |
//! | hold | `give_up` | a call is inside: the backstop's future is ready, the core goes |
//! | hold | `keep` | no call is inside: the waker is kept, the backstop keeps the core |
//! | quiet | `yes` | no call inside and none arrived since the last look: take the core |
//! | quiet | `no` | a call is inside or arrived: look again a grace later |
//! | flag | `set_first` | a wake-up comes before the driving call waits: it does not wait |
//! | flag | `wake_waiter` | the driving call waits: its waker is taken and called |

use crate::loom::{AtomicUsize, Mutex, Ordering};
use bridge_core::__coverage::Decl;
use std::future::{Future, poll_fn};
use std::task::{Poll, Waker};
use std::time::Duration;

/// Every arm of the gate (see the module docs), for bridge-core's `__coverage`.
const ARMS: &[Decl] = &[
    Decl::loom("gate.arrive.wake_backstop"),
    Decl::loom("gate.arrive.backstop_away"),
    Decl::loom("gate.hold.give_up"),
    Decl::loom("gate.hold.keep"),
    Decl::loom("gate.quiet.yes"),
    Decl::loom("gate.quiet.no"),
    Decl::loom("gate.flag.set_first"),
    Decl::loom("gate.flag.wake_waiter"),
];

/// Counts a pass through an arm of the gate.
macro_rules! arm {
    ($machine:literal, $name:ident) => {
        bridge_core::__arm!(ARMS, concat!("gate.", $machine, ".", stringify!($name)))
    };
}

/// One driver's hand-over state.
#[derive(Debug)]
pub struct Gate {
    state: Mutex<State>,
    /// `State::calls`, for a lock-free guess of which driver is free (a caller picking one).
    inside: AtomicUsize,
}

#[derive(Debug, Default)]
struct State {
    /// Calls that drive the runtime or wait for its core.
    calls: usize,
    /// Arrivals so far: the backstop's look sees whether any came since the last.
    arrivals: u64,
    /// The backstop's waker while it holds the core.
    backstop: Option<Waker>,
    /// When the arrival that woke the holding backstop called its waker
    /// (`bridge_core::__spin::now_ns`; 0: none): the backstop's wake-up is a sample of
    /// [`BACKSTOP_WAKE_UPS`].
    woken_at: u64,
}

/// What a backstop's wake-up costs, from an arrival's call of its waker until its future
/// runs: measured at every hand-back, the drivers' grace is derived from it. Kept apart from
/// the handoff's estimate (bridge-core's `__spin`): a wake-up out of `epoll_wait` is not the
/// one the handoff's spins race against.
pub(crate) static BACKSTOP_WAKE_UPS: bridge_core::__spin::Estimate =
    bridge_core::__spin::Estimate::new();

impl Gate {
    /// No call inside, none arrived, the backstop not holding the core.
    pub fn new() -> Self {
        Self {
            state: Mutex::new(State::default()),
            inside: AtomicUsize::new(0),
        }
    }

    /// A call is about to drive the runtime: counted until [`leave`](Self::leave), and the
    /// backstop, if it holds the core, is told to give it up.
    pub fn arrive(&self) {
        let backstop = self.state.with(|state| {
            state.calls += 1;
            state.arrivals += 1;
            // ORDERING: Relaxed: a hint for picking a driver; the lock orders the count.
            self.inside.store(state.calls, Ordering::Relaxed);
            let backstop = state.backstop.take();
            if backstop.is_some() {
                arm!("arrive", wake_backstop);
                state.woken_at = bridge_core::__spin::now_ns();
            } else {
                arm!("arrive", backstop_away);
            }
            backstop
        });
        if let Some(waker) = backstop {
            waker.wake();
        }
    }

    /// The call that arrived has stopped driving.
    pub fn leave(&self) {
        self.state.with(|state| {
            state.calls -= 1;
            // ORDERING: Relaxed, as in `arrive`.
            self.inside.store(state.calls, Ordering::Relaxed);
        });
    }

    /// How many calls drive the runtime or wait to, as last published (a guess: it may
    /// change at once).
    pub fn inside(&self) -> usize {
        // ORDERING: Relaxed: a hint, see `inside`.
        self.inside.load(Ordering::Relaxed)
    }

    /// The backstop's future while it holds the core: ready once a call has arrived, which
    /// then gets the core as the backstop's `block_on` returns. Polled by tokio also while
    /// a call holds the core: it is ready at once, and the backstop never gets it.
    pub fn held(&self) -> impl Future<Output = ()> + '_ {
        poll_fn(|cx| {
            let woken_at = self.state.with(|state| {
                if state.calls > 0 {
                    arm!("hold", give_up);
                    state.backstop = None;
                    Some(std::mem::take(&mut state.woken_at))
                } else {
                    arm!("hold", keep);
                    match &mut state.backstop {
                        Some(kept) if kept.will_wake(cx.waker()) => {}
                        slot => *slot = Some(cx.waker().clone()),
                    }
                    None
                }
            });
            match woken_at {
                Some(woken_at) => {
                    BACKSTOP_WAKE_UPS.record(woken_at);
                    Poll::Ready(())
                }
                None => Poll::Pending,
            }
        })
    }

    /// Returns once a whole `grace` (read at each look) has passed with no call inside and
    /// none arriving, looking once a grace. `seen` is the arrival count of the last look,
    /// kept by the backstop from one wait to the next.
    pub fn wait_quiet(&self, seen: &mut u64, grace: impl Fn() -> Duration) {
        loop {
            let quiet = self.state.with(|state| {
                if state.calls == 0 && state.arrivals == *seen {
                    arm!("quiet", yes);
                    true
                } else {
                    arm!("quiet", no);
                    *seen = state.arrivals;
                    false
                }
            });
            if quiet {
                return;
            }
            #[cfg(not(bridge_loom))]
            std::thread::sleep(grace());
            // A model has no time: a look a grace later is a look after the other threads
            // have had their turn.
            #[cfg(bridge_loom)]
            {
                let _ = &grace;
                loom::thread::yield_now();
            }
        }
    }
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

/// The wake flag of a driving call: the call's future's waker sets it, and the call drives
/// the runtime until it is set ([`wait`](Self::wait)), then polls its future again.
#[derive(Debug)]
pub struct Flag(Mutex<FlagState>);

#[derive(Debug, Default)]
struct FlagState {
    set: bool,
    /// The waker of the `block_on` that waits for the flag.
    waiter: Option<Waker>,
}

impl Flag {
    /// A flag not set.
    pub fn new() -> Self {
        Self(Mutex::new(FlagState::default()))
    }

    /// Sets the flag and wakes the call waiting for it, if one is.
    pub fn set(&self) {
        let waiter = self.0.with(|state| {
            state.set = true;
            let waiter = state.waiter.take();
            if waiter.is_some() {
                arm!("flag", wake_waiter);
            } else {
                arm!("flag", set_first);
            }
            waiter
        });
        if let Some(waiter) = waiter {
            waiter.wake();
        }
    }

    /// Ready once the flag is set; clears it.
    pub fn wait(&self) -> impl Future<Output = ()> + '_ {
        poll_fn(|cx| {
            self.0.with(|state| {
                if std::mem::take(&mut state.set) {
                    state.waiter = None;
                    Poll::Ready(())
                } else {
                    state.waiter = Some(cx.waker().clone());
                    Poll::Pending
                }
            })
        })
    }
}

impl Default for Flag {
    fn default() -> Self {
        Self::new()
    }
}

impl std::task::Wake for Flag {
    fn wake(self: std::sync::Arc<Self>) {
        self.set();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.set();
    }
}
