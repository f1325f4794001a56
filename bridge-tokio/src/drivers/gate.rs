//! Whose turn it is to drive an I/O driver, and the wake flag a call waits on (see
//! `drivers.rs`).
//!
//! A driver's runtime is driven by one thread at a time: the one whose turn it is, which is
//! inside the runtime's `block_on` (and so holds its core) until its own future is woken. The
//! bridge hands the turn over itself instead of leaving it to tokio, so that no thread ever
//! waits for a core in tokio's `block_on`, where it could neither keep a deadline of its own
//! nor wait without tokio's per-thread parker:
//!
//! - A call whose future is pending [`take`](Gate::take)s the turn if it is free, and drives;
//!   otherwise it joins the line of waiting calls and waits on its own [`WakeFlag`] (with its own
//!   deadline, on its own thread), which its future's waker sets, or the turn's hand-over.
//! - A call that stops driving [`release`](Gate::release)s the turn and wakes the first
//!   call in line, which takes it (or finds its future ready and leaves, handing it on).
//! - The backstop thread takes the turn once a whole grace has passed with the turn free and
//!   nobody in line ([`wait_turn`](Gate::wait_turn)), so that tasks spawned by calls keep
//!   running between calls, and gives it up as soon as a call queues for it
//!   ([`held`](Gate::held) returns).
//!
//! The gate's arms, each counted as `gate.<where>.<arm>` for the coverage count:
//!
//! | where | arm | what happens |
//! | --- | --- | --- |
//! | take | `drives` | the turn is free: the call takes it |
//! | take | `queues` | the turn is held: the call joins the line (and wakes a holding backstop) |
//! | take | `still_waiting` | the turn is held and the call is in line already |
//! | release | `hands_over` | a call is in line: the first is woken to take the turn |
//! | release | `frees` | nobody is in line: the turn is free |
//! | hold | `give_up` | a call is in line: the backstop's future is ready, the turn goes |
//! | hold | `keep` | nobody is in line: the waker is kept, the backstop keeps the turn |
//! | quiet | `yes` | the turn free, nobody in line, no turn taken since the last look |
//! | quiet | `no` | a turn was taken, or is held, or a call waits: look again a grace later |
//! | flag | `set_first` | a wake-up comes before the call waits: it does not wait |
//! | flag | `wake_waiter` | the call waits: it is woken |

use crate::sync::{AtomicUsize, Condvar, Mutex, Ordering};
use bridge_core::__coverage::Decl;
use std::collections::VecDeque;
use std::future::{Future, poll_fn};
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

/// Every arm of the gate (see the module docs), for bridge-core's `__coverage`.
const ARMS: &[Decl] = &[
    Decl::loom("gate.take.drives"),
    Decl::loom("gate.take.queues"),
    Decl::loom("gate.take.still_waiting"),
    Decl::loom("gate.release.hands_over"),
    Decl::loom("gate.release.frees"),
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

/// One driver's turn and its line.
#[derive(Debug)]
pub struct Gate {
    state: Mutex<State>,
    /// Calls driving or in line, for a lock-free guess of which driver is free (a caller
    /// picking one).
    inside: AtomicUsize,
}

/// Who drives the runtime now.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Turn {
    #[default]
    Free,
    Call,
    Backstop,
}

#[derive(Debug, Default)]
struct State {
    turn: Turn,
    /// The flags of the calls waiting for the turn, oldest first.
    line: VecDeque<Arc<WakeFlag>>,
    /// Turns taken so far: the backstop's look sees whether a call took one since the last,
    /// and a call in line whether the turn changed hands while it waited.
    turns: u64,
    /// The backstop's waker while it holds the turn.
    backstop: Option<Waker>,
}

impl State {
    /// Calls driving or in line.
    fn calls(&self) -> usize {
        self.line.len() + usize::from(self.turn == Turn::Call)
    }

    fn leave_line(&mut self, flag: &Arc<WakeFlag>) {
        self.line.retain(|queued| !Arc::ptr_eq(queued, flag));
    }
}

/// What [`Gate::take`] gave the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// The call holds the turn: it drives, then releases it.
    Drive,
    /// Another thread holds the turn (the count of turns taken so far says which turn):
    /// the call is in line and waits on its flag.
    Wait(u64),
}

impl Gate {
    /// The turn free, nobody in line.
    pub fn new() -> Self {
        Self {
            state: Mutex::new(State::default()),
            inside: AtomicUsize::new(0),
        }
    }

    /// Locks the state, and publishes the count of calls inside after `f`.
    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        self.state.with(|state| {
            let r = f(state);
            // ORDERING: Relaxed: a hint for picking a driver; the lock orders the count.
            self.inside.store(state.calls(), Ordering::Relaxed);
            r
        })
    }

    /// A call whose future is pending asks for the turn: [`Take::Drive`] if it was free (the
    /// call then holds it until [`release`](Self::release)), [`Take::Wait`] otherwise, with
    /// the call in line: its `flag` is set when the turn is handed to it.
    pub fn take(&self, flag: &Arc<WakeFlag>) -> Take {
        let (take, backstop) = self.with(|state| {
            if state.turn == Turn::Free {
                arm!("take", drives);
                state.turn = Turn::Call;
                state.turns += 1;
                state.leave_line(flag);
                return (Take::Drive, None);
            }
            if state.line.iter().any(|queued| Arc::ptr_eq(queued, flag)) {
                arm!("take", still_waiting);
            } else {
                arm!("take", queues);
                state.line.push_back(Arc::clone(flag));
            }
            (Take::Wait(state.turns), state.backstop.take())
        });
        if let Some(backstop) = backstop {
            backstop.wake();
        }
        take
    }

    /// The holder of the turn (a call, or the backstop) stops driving: the first call in
    /// line is woken to take it.
    pub fn release(&self) {
        let next = self.with(|state| {
            state.turn = Turn::Free;
            let next = state.line.front().cloned();
            if next.is_some() {
                arm!("release", hands_over);
            } else {
                arm!("release", frees);
            }
            next
        });
        if let Some(next) = next {
            next.set();
        }
    }

    /// A call ends (done, timed out, or panicked): it leaves the line, and if the turn is
    /// free, the first call still in line is woken for it (this call may have been woken for
    /// it, and not taken it).
    pub fn leave(&self, flag: &Arc<WakeFlag>) {
        let next = self.with(|state| {
            state.leave_line(flag);
            match state.turn {
                Turn::Free => state.line.front().cloned(),
                _ => None,
            }
        });
        if let Some(next) = next {
            next.set();
        }
    }

    /// Whether the turn was handed over since `turns` (what [`Take::Wait`] said) or is free:
    /// `false` means the same holder has kept it all along.
    pub fn moved_since(&self, turns: u64) -> bool {
        self.with(|state| state.turn == Turn::Free || state.turns != turns)
    }

    /// How many calls drive or wait in line, as last published (a guess: it may change at
    /// once).
    pub fn inside(&self) -> usize {
        // ORDERING: Relaxed: a hint, see `with`.
        self.inside.load(Ordering::Relaxed)
    }

    /// The backstop: returns holding the turn, once a whole `grace` has passed with the turn
    /// free, nobody in line and no turn taken, looking once a grace. `seen` is the count of
    /// turns at the last look, kept from one wait to the next.
    pub fn wait_turn(&self, seen: &mut u64, grace: Duration) {
        loop {
            let taken = self.with(|state| {
                if state.turn == Turn::Free && state.line.is_empty() && state.turns == *seen {
                    arm!("quiet", yes);
                    state.turn = Turn::Backstop;
                    state.turns += 1;
                    *seen = state.turns;
                    true
                } else {
                    arm!("quiet", no);
                    *seen = state.turns;
                    false
                }
            });
            if taken {
                return;
            }
            #[cfg(not(bridge_loom))]
            std::thread::sleep(grace);
            // A model has no time: a look a grace later is a look after the other threads
            // have had their turn.
            #[cfg(bridge_loom)]
            {
                let _ = grace;
                loom::thread::yield_now();
            }
        }
    }

    /// The backstop's future while it holds the turn: ready once a call is in line.
    pub fn held(&self) -> impl Future<Output = ()> + '_ {
        poll_fn(|cx| {
            self.with(|state| {
                if state.line.is_empty() {
                    arm!("hold", keep);
                    match &mut state.backstop {
                        Some(kept) if kept.will_wake(cx.waker()) => {}
                        slot => *slot = Some(cx.waker().clone()),
                    }
                    Poll::Pending
                } else {
                    arm!("hold", give_up);
                    state.backstop = None;
                    Poll::Ready(())
                }
            })
        })
    }
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

/// The wake flag of a call: its future's waker sets it (and the turn's hand-over does), and
/// the call waits for it, driving the runtime ([`wait`](Self::wait), a future for its
/// `block_on`) or blocked on its own thread ([`wait_blocking`](Self::wait_blocking)).
#[derive(Debug)]
pub struct WakeFlag {
    state: Mutex<FlagState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct FlagState {
    set: bool,
    /// The waker of the `block_on` that waits for the flag.
    waiter: Option<Waker>,
    /// Whether the call is blocked in `wait_blocking`.
    sleeping: bool,
}

impl WakeFlag {
    /// A flag not set.
    pub fn new() -> Self {
        Self {
            state: Mutex::new(FlagState::default()),
            changed: Condvar::new(),
        }
    }

    /// Sets the flag and wakes the call waiting for it, if one is.
    pub fn set(&self) {
        let (waiter, sleeping) = self.state.with(|state| {
            state.set = true;
            let waiter = state.waiter.take();
            if waiter.is_some() || state.sleeping {
                arm!("flag", wake_waiter);
            } else {
                arm!("flag", set_first);
            }
            (waiter, state.sleeping)
        });
        if sleeping {
            self.changed.notify_one();
        }
        if let Some(waiter) = waiter {
            waiter.wake();
        }
    }

    /// Clears the flag; whether it was set.
    pub fn take(&self) -> bool {
        self.state.with(|state| std::mem::take(&mut state.set))
    }

    /// Ready once the flag is set; clears it.
    pub fn wait(&self) -> impl Future<Output = ()> + '_ {
        poll_fn(|cx| {
            self.state.with(|state| {
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

    /// Blocks this thread until the flag is set (then clears it: `true`) or `deadline`
    /// passes (`false`), after the family's backoff (bridge-core's `__backoff`): the driving
    /// call often wakes a call in line within microseconds.
    pub fn wait_blocking(&self, deadline: Option<Instant>) -> bool {
        if bridge_core::__backoff::spin_until(|| self.take().then_some(())).is_some() {
            return true;
        }
        let set = self.state.wait_on(&self.changed, deadline, |state| {
            let set = std::mem::take(&mut state.set);
            state.sleeping = !set;
            set.then_some(())
        });
        if set.is_none() {
            self.state.with(|state| state.sleeping = false);
        }
        set.is_some()
    }
}

impl Default for WakeFlag {
    fn default() -> Self {
        Self::new()
    }
}

impl std::task::Wake for WakeFlag {
    fn wake(self: Arc<Self>) {
        self.set();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.set();
    }
}
