//! Cross-thread races with real threads: every convention of the oneshot against a sender on
//! another thread, 100,000 times each, with every value's drop counted.
//!
//! A second thread owns the senders and sends (or drops, or sends into a dropped receiver)
//! after a random spin, while this thread receives after its own random spin, so the two
//! meet in every phase: before the receiver looks, during its spin, after it parked.

mod helpers;

use bridge_core::oneshot::{self, RecvError, RecvTimeoutError, TryRecvError};
use helpers::{Counted, DropCounter};
use std::future::Future;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

const ROUNDS: usize = 100_000;

/// A tiny xorshift generator: the spins need variety, not quality.
struct Rng(u64);

impl Rng {
    fn spin(&mut self) {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        for _ in 0..self.0 % 64 {
            std::hint::spin_loop();
        }
    }
}

/// What the sending thread does with each sender.
#[derive(Clone, Copy, PartialEq)]
enum Act {
    Send,
    Drop,
}

/// Runs `ROUNDS` rounds: the other thread acts on each sender, this thread calls `receive`.
/// Returns how many values were received.
fn race(
    acts: fn(usize) -> Act,
    mut receive: impl FnMut(usize, oneshot::Receiver<Counted>, Act) -> Option<Counted>,
) -> usize {
    let drops = DropCounter::default();
    let (to_sender, senders) = mpsc::channel::<(usize, oneshot::Sender<Counted>)>();
    let counter = drops.clone();
    let sending = thread::spawn(move || {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for (i, tx) in senders {
            rng.spin();
            match acts(i) {
                Act::Send => {
                    // A refused value comes back whole and is dropped here, once.
                    if let Err(back) = tx.send(counter.value(i)) {
                        assert_eq!(back.0.id, i);
                    }
                }
                Act::Drop => drop(tx),
            }
        }
    });
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let mut received = 0;
    let mut created = 0;
    for i in 0..ROUNDS {
        let (tx, rx) = oneshot::channel();
        to_sender.send((i, tx)).unwrap();
        rng.spin();
        if let Some(value) = receive(i, rx, acts(i)) {
            assert_eq!(value.id, i, "a value arrived in the wrong channel");
            received += 1;
        }
        created += 1;
    }
    drop(to_sender);
    sending.join().unwrap();
    // Every value that was made was dropped exactly once, wherever it ended.
    let made = (0..created).filter(|&i| acts(i) == Act::Send).count();
    assert_eq!(drops.drops(), made, "values lost or dropped twice");
    received
}

/// The plan both threads follow: every fifth sender is dropped without sending.
fn acts_of(i: usize) -> Act {
    if i % 5 == 4 { Act::Drop } else { Act::Send }
}

fn expect(act: Act, got: Result<Counted, RecvError>) -> Option<Counted> {
    match (act, got) {
        (Act::Send, Ok(value)) => Some(value),
        (Act::Drop, Err(RecvError)) => None,
        (Act::Send, Err(e)) => panic!("lost a sent value: {e}"),
        (Act::Drop, Ok(_)) => panic!("a value from a sender that never sent"),
    }
}

#[test]
fn recv_blocking_races() {
    let received = race(acts_of, |_, rx, act| expect(act, rx.recv_blocking()));
    assert_eq!(received, ROUNDS / 5 * 4);
}

#[test]
fn recv_timeout_races() {
    // A timeout of a few microseconds makes the timeout and the send collide often; the
    // receiver retries until it has an answer.
    let received = race(acts_of, |i, mut rx, act| {
        let timeout = Duration::from_micros((i % 7) as u64);
        loop {
            match rx.recv_timeout(timeout) {
                Ok(v) => break expect(act, Ok(v)),
                Err(RecvTimeoutError::Closed) => break expect(act, Err(RecvError)),
                Err(RecvTimeoutError::Timeout) => continue,
            }
        }
    });
    assert_eq!(received, ROUNDS / 5 * 4);
}

#[test]
fn try_recv_races() {
    let received = race(acts_of, |_, mut rx, act| {
        loop {
            match rx.try_recv() {
                Ok(v) => break expect(act, Ok(v)),
                Err(TryRecvError::Closed) => break expect(act, Err(RecvError)),
                Err(TryRecvError::Empty) => std::hint::spin_loop(),
            }
        }
    });
    assert_eq!(received, ROUNDS / 5 * 4);
}

#[test]
fn await_races_with_block_on() {
    let received = race(acts_of, |_, rx, act| expect(act, bridge_core::block_on(rx)));
    assert_eq!(received, ROUNDS / 5 * 4);
}

#[test]
fn await_races_on_a_tokio_runtime() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let received = race(acts_of, |_, rx, act| expect(act, rt.block_on(rx)));
    assert_eq!(received, ROUNDS / 5 * 4);
}

#[test]
fn mixed_conventions_race() {
    // Poll once, then block with a short timeout, then poll in a loop: the send lands
    // anywhere in between.
    let received = race(acts_of, |_, mut rx, act| {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        if let std::task::Poll::Ready(got) = std::pin::Pin::new(&mut rx).poll(&mut cx) {
            return expect(act, got);
        }
        match rx.recv_timeout(Duration::from_micros(2)) {
            Ok(v) => return expect(act, Ok(v)),
            Err(RecvTimeoutError::Closed) => return expect(act, Err(RecvError)),
            Err(RecvTimeoutError::Timeout) => {}
        }
        expect(act, bridge_core::block_on(rx))
    });
    assert_eq!(received, ROUNDS / 5 * 4);
}

#[test]
fn receiver_drop_races_send() {
    // The receiver is dropped at a random moment; the value then either comes back to the
    // sender (which drops it) or is dropped with the receiver. `race` checks the total.
    let received = race(
        |_| Act::Send,
        |_, rx, _| {
            drop(rx);
            None
        },
    );
    assert_eq!(received, 0);
}

/// The arms of the blocking receive and the parker that loom cannot reach (its timed park
/// never returns before the deadline, and its `block_on` caches no wake flag), each driven
/// on purpose with real threads; `.ci/loom-coverage` relies on these tests for them (it reads
/// the lines they ran from an instrumented build).
#[test]
fn the_arms_loom_cannot_reach() {
    // The delays only order the two threads; a thread descheduled for longer than a delay
    // makes the round miss its arm, so a later round tries again with a longer one.
    for delay in [10, 50, 250].map(Duration::from_millis) {
        // A value that comes long after the spin: every spin round, then a park with a
        // deadline that an unpark ends early.
        let (tx, mut rx) = oneshot::channel();
        let sender = thread::spawn(move || {
            thread::sleep(delay);
            tx.send(1u8).unwrap();
        });
        assert_eq!(rx.recv_timeout(Duration::from_secs(600)), Ok(1));
        sender.join().unwrap();

        // A waker that outlives its `block_on` call and wakes later: the thread's cached
        // wake flag is stale when the next call takes it, and that call must not be fooled
        // by it (it still waits for its own value).
        let mut kept = None;
        bridge_core::block_on(std::future::poll_fn(|cx| {
            kept = Some(cx.waker().clone());
            std::task::Poll::Ready(())
        }));
        kept.unwrap().wake();
        let (tx, rx) = oneshot::channel();
        let sender = thread::spawn(move || {
            thread::sleep(delay);
            tx.send(2u8).unwrap();
        });
        assert_eq!(bridge_core::block_on(rx), Ok(2));
        sender.join().unwrap();
    }
}
