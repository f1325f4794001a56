//! loom models of the drivers' gate (bridge-tokio's `gate.rs`): the hand-over of a driver's
//! core between the calls that drive it and its backstop, and the wake flag a driving call
//! waits on.
//!
//! ```sh
//! RUSTFLAGS="--cfg bridge_loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p threadbridge-tokio --release --test loom_gate
//! ```
//!
//! tokio's core is not the bridge's: here it is a loom mutex, which the backstop holds while
//! its `held` future is pending and a call takes to drive. The backstop's `block_on` is
//! bridge-core's (a loom park). A call whose arrival the holding backstop misses waits for
//! the core forever, and the backstop in its park: loom reports the deadlock.
#![cfg(bridge_loom)]

use bridge_tokio::{__LoomFlag, __LoomGate};
use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
use loom::sync::{Arc, Mutex};
use loom::thread;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

/// The backstop's hold: it takes the core and holds it until a call arrives. (Its wait for
/// quiet before, a loop of looks, is modelled on its own: with it, a backstop that finds the
/// model's last call inside would look for ever.)
fn backstop_turn(gate: &__LoomGate, core: &Mutex<()>) {
    let _core = core.lock().unwrap();
    bridge_core::block_on(gate.held());
}

/// A call: it arrives, drives with the core, and leaves.
fn call(gate: &__LoomGate, core: &Mutex<()>) {
    gate.arrive();
    drop(core.lock().unwrap());
    gate.leave();
}

/// `calls` calls race the backstop's turn, each on a thread of its own; then a last call
/// arrives, which the backstop must see whatever it did before.
fn calls_against_the_backstop(calls: usize) {
    let gate = Arc::new(__LoomGate::new());
    let core = Arc::new(Mutex::new(()));
    let backstop = {
        let (gate, core) = (gate.clone(), core.clone());
        thread::spawn(move || backstop_turn(&gate, &core))
    };
    let callers: Vec<_> = (0..calls)
        .map(|_| {
            let (gate, core) = (gate.clone(), core.clone());
            thread::spawn(move || call(&gate, &core))
        })
        .collect();
    for caller in callers {
        caller.join().unwrap();
    }
    // The last call: the backstop holds the core or is about to.
    gate.arrive();
    backstop.join().unwrap();
    drop(core.lock().unwrap());
    gate.leave();
    assert_eq!(gate.inside(), 0);
}

/// One call races the backstop's turn.
///
/// Covers: an arrival while the backstop holds the core (`arrive.wake_backstop`,
/// `hold.give_up`) or before it takes it (`arrive.backstop_away`), and the backstop's keep
/// (`hold.keep`). Catches: a lost arrival (the call never gets the core: a deadlock).
#[test]
fn a_holding_backstop_gives_the_core_to_a_call() {
    loom::model(|| calls_against_the_backstop(1));
}

/// Two calls at once against the backstop's turn. Catches: an arrival lost between the two
/// calls' counts (one call's leave hiding the other's arrival from the backstop).
#[test]
fn two_calls_and_the_backstop() {
    loom::model(|| calls_against_the_backstop(2));
}

/// The backstop's wait for quiet does not end while a call is inside. Covers `quiet.no`
/// then `quiet.yes`; catches a look that takes the core from a call that drives.
#[test]
fn quiet_waits_for_the_call_inside() {
    loom::model(|| {
        let gate = Arc::new(__LoomGate::new());
        let left = Arc::new(AtomicBool::new(false));
        gate.arrive();
        let backstop = {
            let (gate, left) = (gate.clone(), left.clone());
            thread::spawn(move || {
                let mut seen = 0;
                gate.wait_quiet(&mut seen, || std::time::Duration::ZERO);
                assert!(left.load(SeqCst), "quiet while a call was inside");
                assert_eq!(seen, 1);
            })
        };
        left.store(true, SeqCst);
        gate.leave();
        backstop.join().unwrap();
    });
}

/// A driving call's flag, set from another thread while the call waits or before it does:
/// the wait ends, and the flag is clear after it. Covers `flag.set_first` and
/// `flag.wake_waiter`; catches a lost wake-up (a deadlock) and a flag left set (which makes
/// the call poll its future again for nothing, and again).
#[test]
fn a_wake_from_another_thread_ends_the_wait() {
    loom::model(|| {
        let flag = std::sync::Arc::new(__LoomFlag::new());
        let waker = Waker::from(flag.clone());
        let waking = thread::spawn(move || waker.wake());
        bridge_core::block_on(flag.wait());
        waking.join().unwrap();
        let mut again = pin!(flag.wait());
        let polled = again.as_mut().poll(&mut Context::from_waker(Waker::noop()));
        assert_eq!(polled, Poll::Pending, "the flag was left set");
    });
}
