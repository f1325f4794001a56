//! loom models of the drivers' gate (bridge-tokio's `gate.rs`): the hand-over of a driver's
//! turn between the calls that drive it and its backstop, and the wake flag a call waits on.
//!
//! ```sh
//! RUSTFLAGS="--cfg bridge_loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p threadbridge-tokio --release --test loom_gate
//! ```
//!
//! tokio's core is not the bridge's: here it is a loom mutex that whoever drives takes with
//! `try_lock`, so two drivers at once fail the model. The runtime's `block_on` of the call's
//! flag is bridge-core's (a loom park), the backstop's too. A call whose turn is lost waits
//! for ever: loom reports the deadlock.
#![cfg(bridge_loom)]

use bridge_tokio::{__LoomFlag, __LoomGate, __LoomTake};
use loom::sync::Mutex;
use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
use loom::thread;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// A loom thread whose end the model waits for by looking at a flag before it joins it: a
/// waker may still unpark a thread after the wait it was meant for ended (a wake is a flag
/// set, then an unpark); a real thread's join ignores that, loom's fails the model.
struct Tracked {
    handle: thread::JoinHandle<()>,
    done: Arc<AtomicBool>,
}

impl Tracked {
    fn spawn(f: impl FnOnce() + 'static) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let handle = thread::spawn(move || {
            f();
            flag.store(true, SeqCst);
        });
        Self { handle, done }
    }

    fn join(self) {
        while !self.done.load(SeqCst) {
            thread::yield_now();
        }
        self.handle.join().unwrap();
    }
}

/// One call's loop, as `Driver::run` (drivers.rs) runs it, branch for branch: poll the
/// future (`poll`, given the call's flag: `true` when ready); take the turn or wait in line
/// (a flag set already: yield, then poll again); holding it, drive (a flag set already, by
/// a future that woke itself: one turn and no wait; otherwise until the flag is set) and
/// release; at the end, leave.
fn call(gate: &__LoomGate, core: &Mutex<()>, mut poll: impl FnMut(&Arc<__LoomFlag>) -> bool) {
    let flag = Arc::new(__LoomFlag::new());
    while !poll(&flag) {
        match gate.take(&flag) {
            __LoomTake::Drive => {
                {
                    let _core = core.try_lock().expect("two threads drive at once");
                    if !flag.take() {
                        bridge_core::block_on(flag.wait());
                    }
                }
                gate.release();
            }
            __LoomTake::Wait(_) => {
                if flag.take() {
                    thread::yield_now();
                } else {
                    flag.wait_blocking(None);
                }
            }
        }
    }
    gate.leave(&flag);
}

/// A future that wakes itself at each of its first `wakes` polls (a `yield_now` loop) and is
/// ready at the next.
fn self_woken(wakes: usize) -> impl FnMut(&Arc<__LoomFlag>) -> bool {
    let mut polls = 0;
    move |flag| {
        polls += 1;
        if polls <= wakes {
            flag.set();
        }
        polls > wakes
    }
}

/// The backstop's hold of the turn it took: it holds it (the core with it) until a call is
/// in line, and releases it. (Its wait for the turn, a loop of looks, is modelled on its
/// own: with it, a backstop that took the turn after the model's last call would hold it
/// for ever.)
fn backstop_hold(gate: &__LoomGate, core: &Mutex<()>) {
    {
        let _core = core.try_lock().expect("two threads drive at once");
        bridge_core::block_on(gate.held());
    }
    gate.release();
}

/// The backstop takes the turn (its look finds it free), then `calls` self-woken calls, each
/// on a thread of its own (the model's thread one of them), race its hold: one that queues makes it give the turn up, and
/// every call gets the turn or a hand-over until it is done; a last call then needs the
/// turn, which the backstop gives up if it still holds it.
fn self_woken_calls_against_the_backstop(calls: usize, wakes: usize) {
    let gate = Arc::new(__LoomGate::new());
    let core = Arc::new(Mutex::new(()));
    let mut seen = 0;
    gate.wait_turn(&mut seen, Duration::ZERO);
    let backstop = {
        let (gate, core) = (gate.clone(), core.clone());
        Tracked::spawn(move || backstop_hold(&gate, &core))
    };
    // The model's own thread is one of the calls.
    let callers: Vec<_> = (1..calls)
        .map(|_| {
            let (gate, core) = (gate.clone(), core.clone());
            Tracked::spawn(move || call(&gate, &core, self_woken(wakes)))
        })
        .collect();
    call(&gate, &core, self_woken(wakes));
    for caller in callers {
        caller.join();
    }
    // A last call that needs the turn: if the calls left the backstop holding it (their
    // futures were done before it gave it up), the backstop gives it to this one.
    let flag = Arc::new(__LoomFlag::new());
    loop {
        match gate.take(&flag) {
            __LoomTake::Drive => break,
            __LoomTake::Wait(_) => {
                flag.wait_blocking(None);
            }
        }
    }
    gate.release();
    gate.leave(&flag);
    backstop.join();
    assert_eq!(gate.inside(), 0);
}

/// A call whose future wakes itself twice, against the backstop's hold: it waits in line
/// while the backstop holds the turn (polling again after each self-wake, and asking again),
/// which the backstop then hands to it.
///
/// Covers: `take.queues`, `take.still_waiting` (a call in line woken by its own future, not
/// by the hand-over, asks again), `release.hands_over`, `hold.keep`, `hold.give_up`,
/// `flag.wake_waiter` (the hand-over wakes the call in line). Catches: a lost hand-over (a call in line never woken: deadlock), a
/// backstop that misses a call in line (deadlock), two drivers at once (the core's
/// `try_lock`), a self-woken call that waits for a wake-up it already had (deadlock).
#[test]
fn a_self_woken_call_and_the_backstop() {
    loom::model(|| self_woken_calls_against_the_backstop(1, 2));
}

/// Two self-woken calls at once against the backstop's hold. Covers `take.drives` (the turn
/// handed on to a call that then drives one turn without waiting: its flag was set) and
/// `release.frees`; catches a hand-over lost between the two calls (one call's
/// leave hiding the other in line: deadlock).
#[test]
fn two_self_woken_calls_and_the_backstop() {
    loom::model(|| self_woken_calls_against_the_backstop(2, 1));
}

/// The backstop's wait for the turn does not end while a call holds it. Covers `quiet.no`
/// then `quiet.yes`; catches a look that takes the turn from a call that drives.
#[test]
fn the_backstop_waits_for_the_call_that_drives() {
    loom::model(|| {
        let gate = Arc::new(__LoomGate::new());
        let flag = Arc::new(__LoomFlag::new());
        let left = Arc::new(AtomicBool::new(false));
        assert_eq!(gate.take(&flag), __LoomTake::Drive);
        let backstop = {
            let (gate, left) = (gate.clone(), left.clone());
            Tracked::spawn(move || {
                let mut seen = 0;
                gate.wait_turn(&mut seen, Duration::ZERO);
                assert!(left.load(SeqCst), "the backstop took the turn from a call");
                gate.release();
            })
        };
        left.store(true, SeqCst);
        gate.release();
        gate.leave(&flag);
        backstop.join();
    });
}

/// A call's flag, set from another thread while the call waits or before it does, in both
/// waits (the runtime's `block_on` of `wait`, and `wait_blocking` on the call's thread): the
/// wait ends, and the flag is clear after it. Covers `flag.set_first` and
/// `flag.wake_waiter`; catches a lost wake-up (a deadlock) and a flag left set (which makes
/// the call poll its future again for nothing, and again).
#[test]
fn a_wake_from_another_thread_ends_the_wait() {
    loom::model(|| {
        let flag = Arc::new(__LoomFlag::new());
        let waker = Waker::from(flag.clone());
        let again = waker.clone();
        let waking = Tracked::spawn(move || waker.wake());
        bridge_core::block_on(flag.wait());
        waking.join();
        let waking = Tracked::spawn(move || again.wake());
        assert!(flag.wait_blocking(None));
        waking.join();
        let mut left = pin!(flag.wait());
        let polled = left.as_mut().poll(&mut Context::from_waker(Waker::noop()));
        assert_eq!(polled, Poll::Pending, "the flag was left set");
    });
}
