//! loom models of the oneshot channel and of `block_on`'s wake flag.
//!
//! Run with (release, because loom explores thousands of interleavings per model):
//!
//! ```sh
//! RUSTFLAGS="--cfg bridge_loom" LOOM_MAX_PREEMPTIONS=2 \
//!     cargo test -p threadbridge-core --release --test loom
//! ```
//!
//! The channel's loom build poisons its state when it is freed and tracks its allocation, so
//! a use after free or a double free panics and a channel that is never freed fails the
//! model as a leak. Values carry a `loom::alloc::Track` (leak check) and a drop counter
//! (double drop check). Each model names the bug it catches, and `.ci/hand-mutants` plants
//! those bugs one at a time (the patches in `.ci/mutants/`) to show that the model fails on
//! each.
//!
//! The iteration counts are small (5 to a few hundred at bound 2, about twice that at 3)
//! because each side of the channel makes only a handful of atomic operations and loom's
//! partial-order reduction skips orders of independent ones. Two habits keep the models
//! honest: every load of the state comes before any spin or yield (so loom cannot always
//! run the other side first), and a side that only reads (`try_recv`) reads in a loop with
//! `yield_now`, because loom does not reorder a lone read before a thread that starts with
//! a read.
//!
//! Timed waits use a deadline far away (or one already passed): loom's timed park reports
//! the deadline passed after a yield whatever its value, while the receive itself checks the
//! real clock once ("already passed?"); a deadline a millisecond away would take either branch
//! depending on how the machine scheduled the test, and loom needs every execution of a model
//! to take the same branches.
#![cfg(bridge_loom)]

mod helpers;

use bridge_core::oneshot::{self, RecvError, RecvTimeoutError, TryRecvError};
use helpers::{CountingWaker, DropCounter, counted_waker};
use loom::alloc::Track;
use loom::thread;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// A value with loom's leak tracking and a drop counter.
type Value = Track<helpers::Counted>;

fn value(counter: &DropCounter, id: usize) -> Value {
    Track::new(counter.value(id))
}

fn poll_once<F: Future + Unpin>(future: &mut F, waker: &std::task::Waker) -> Poll<F::Output> {
    Pin::new(future).poll(&mut Context::from_waker(waker))
}

/// Send against an async receive: the poll either takes the value or registers a waker that
/// the send then wakes exactly once.
///
/// Catches: a send that stores MESSAGE without waking the registered waker (lost wake-up:
/// the second poll is never woken); a Relaxed publish of the value (loom reports the racing
/// access to the value slot); a receiver that frees while the sender still reads the waker.
#[test]
fn send_vs_poll() {
    loom::model(|| {
        let drops = DropCounter::default();
        let (tx, mut rx) = oneshot::channel::<Value>();
        let sent = value(&drops, 1);
        let sender = thread::spawn(move || tx.send(sent).map_err(|_| "receiver gone"));
        let (wakes, waker) = CountingWaker::new();
        match poll_once(&mut rx, &waker) {
            Poll::Ready(Ok(v)) => {
                assert_eq!(v.get_ref().id, 1);
                sender.join().unwrap().unwrap();
                assert_eq!(
                    wakes.wakes(),
                    0,
                    "woken although the first poll got the value"
                );
            }
            Poll::Ready(Err(e)) => panic!("unexpected {e}"),
            Poll::Pending => {
                sender.join().unwrap().unwrap();
                assert_eq!(
                    wakes.wakes(),
                    1,
                    "the send must wake the registered waker once"
                );
                match poll_once(&mut rx, &waker) {
                    Poll::Ready(Ok(v)) => assert_eq!(v.get_ref().id, 1),
                    other => panic!("expected the value after the wake, got {other:?}"),
                }
            }
        }
        assert!(matches!(
            poll_once(&mut rx, &waker),
            Poll::Ready(Err(RecvError))
        ));
        drop(rx);
        assert_eq!(drops.drops(), 1);
    });
}

/// Send against a blocking receive.
///
/// Catches: a lost unpark (the receiver parks after the sender's wake and loom reports the
/// deadlock); a receiver that frees the channel while the sender is between taking the
/// waker and its final store (UNPARKING ignored: use after free).
#[test]
fn send_vs_recv_blocking() {
    loom::model(|| {
        let drops = DropCounter::default();
        let (tx, rx) = oneshot::channel::<Value>();
        let sent = value(&drops, 7);
        let sender = thread::spawn(move || tx.send(sent).map_err(|_| "receiver gone"));
        let got = rx.recv_blocking().expect("the value");
        assert_eq!(got.get_ref().id, 7);
        sender.join().unwrap().unwrap();
        drop(got);
        assert_eq!(drops.drops(), 1);
    });
}

/// Send against a receive with a timeout (loom's timed park yields once, then expires).
///
/// Catches: a timeout that leaves its thread waker registered (the next receive would find
/// a stale waker it did not expect, or it leaks); a timeout that loses a value that arrived
/// during the reclaim; a receiver that is unusable after a timeout.
#[test]
fn send_vs_recv_timeout() {
    loom::model(|| {
        let drops = DropCounter::default();
        let (tx, mut rx) = oneshot::channel::<Value>();
        let sent = value(&drops, 3);
        let sender = thread::spawn(move || tx.send(sent).map_err(|_| "receiver gone"));
        match rx.recv_timeout(Duration::from_secs(3600)) {
            Ok(v) => {
                assert_eq!(v.get_ref().id, 3);
                drop(v);
            }
            Err(RecvTimeoutError::Timeout) => {
                sender.join().unwrap().unwrap();
                let v = rx.try_recv().expect("the value after the sender finished");
                assert_eq!(v.get_ref().id, 3);
                drop((v, rx));
                assert_eq!(drops.drops(), 1);
                return;
            }
            Err(RecvTimeoutError::Closed) => panic!("closed although the sender sends"),
        }
        sender.join().unwrap().unwrap();
        assert_eq!(rx.try_recv().unwrap_err(), TryRecvError::Closed);
        drop(rx);
        assert_eq!(drops.drops(), 1);
    });
}

/// Sender dropped against an async receive: the receiver learns of the close.
///
/// Catches: a sender drop that stores DISCONNECTED without waking (the receiver waits
/// forever); a receiver that leaks its waker or the channel.
#[test]
fn sender_drop_vs_poll() {
    loom::model(|| {
        let (tx, mut rx) = oneshot::channel::<Value>();
        let sender = thread::spawn(move || drop(tx));
        let (wakes, waker) = CountingWaker::new();
        if poll_once(&mut rx, &waker).is_pending() {
            sender.join().unwrap();
            assert_eq!(
                wakes.wakes(),
                1,
                "a sender drop must wake the receiver once"
            );
        } else {
            sender.join().unwrap();
        }
        assert!(matches!(
            poll_once(&mut rx, &waker),
            Poll::Ready(Err(RecvError))
        ));
    });
}

/// Sender dropped against a blocking receive.
///
/// Catches: a sender drop that does not unpark the parked receiver (deadlock).
#[test]
fn sender_drop_vs_recv_blocking() {
    loom::model(|| {
        let (tx, rx) = oneshot::channel::<Value>();
        let sender = thread::spawn(move || drop(tx));
        assert_eq!(rx.recv_blocking().map(|_| ()), Err(RecvError));
        sender.join().unwrap();
    });
}

/// Sender dropped against a timed receive and then a sync one.
///
/// Catches: a timeout that races the close and reports neither; a close lost because the
/// reclaim after the timeout overwrote DISCONNECTED.
#[test]
fn sender_drop_vs_recv_timeout() {
    loom::model(|| {
        let (tx, mut rx) = oneshot::channel::<Value>();
        let sender = thread::spawn(move || drop(tx));
        let first = rx.recv_timeout(Duration::from_secs(3600));
        assert!(matches!(
            first,
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Closed)
        ));
        sender.join().unwrap();
        assert_eq!(rx.try_recv().map(|_| ()), Err(TryRecvError::Closed));
    });
}

/// Sender dropped against `try_recv` polled in a loop: only Empty until the close lands,
/// then Closed, never a value.
///
/// Catches: a close that `try_recv` misreads (a value from an empty slot, or Closed before
/// the sender dropped); a close that is never observed (the loop never ends: loom reports
/// the livelock).
#[test]
fn sender_drop_vs_try_recv() {
    loom::model(|| {
        let (tx, mut rx) = oneshot::channel::<Value>();
        let sender = thread::spawn(move || drop(tx));
        loop {
            match rx.try_recv().map(|_| ()) {
                Err(TryRecvError::Empty) => thread::yield_now(),
                Err(TryRecvError::Closed) => break,
                Ok(()) => panic!("a value from a sender that never sent"),
            }
        }
        sender.join().unwrap();
        assert_eq!(rx.try_recv().map(|_| ()), Err(TryRecvError::Closed));
    });
}

/// Send against `try_recv` polled in a loop: the value arrives whole, exactly once.
///
/// Catches: a Relaxed publish of the value (loom reports the racing access to the slot); a
/// value taken twice (the second `try_recv` must say Closed).
#[test]
fn send_vs_try_recv() {
    loom::model(|| {
        let drops = DropCounter::default();
        let (tx, mut rx) = oneshot::channel::<Value>();
        let sent = value(&drops, 8);
        let sender = thread::spawn(move || tx.send(sent).map_err(|_| "receiver gone"));
        let got = loop {
            match rx.try_recv() {
                Ok(v) => break v,
                Err(TryRecvError::Empty) => thread::yield_now(),
                Err(TryRecvError::Closed) => panic!("closed although the sender sends"),
            }
        };
        assert_eq!(got.get_ref().id, 8);
        assert_eq!(rx.try_recv().map(|_| ()), Err(TryRecvError::Closed));
        sender.join().unwrap().unwrap();
        drop((got, rx));
        assert_eq!(drops.drops(), 1);
    });
}

/// Receiver dropped against a send: the value is dropped exactly once, by the receiver if it
/// got there after the send, otherwise handed back to the sender, who still owns it.
///
/// Catches: a value dropped by the channel after a failed send handed it back (double
/// drop); a value leaked when the receiver drops a delivered message (Track leak); both
/// sides freeing the channel (poisoned state: double free), or neither (allocation leak).
#[test]
fn receiver_drop_vs_send() {
    loom::model(|| {
        let drops = DropCounter::default();
        let (tx, rx) = oneshot::channel::<Value>();
        let sent = value(&drops, 5);
        let counter = drops.clone();
        let sender = thread::spawn(move || match tx.send(sent) {
            Ok(()) => false,
            Err(back) => {
                // The value came back whole and the channel did not drop it.
                assert_eq!(back.0.get_ref().id, 5);
                assert_eq!(counter.drops(), 0);
                true
            }
        });
        drop(rx);
        let returned = sender.join().unwrap();
        // Either way the value is dropped exactly once by now: by the receiver's drop, or by
        // the sender thread when it dropped what came back.
        assert_eq!(drops.drops(), 1, "returned = {returned}");
    });
}

/// The receiver registers a waker, then is dropped while the send races it.
///
/// Catches: a receiver drop that frees the channel while the sender is between taking the
/// waker and its final store (UNPARKING treated as done: the sender's store lands on freed
/// memory, which the loom build's poisoned state reports); a waker reclaimed by both sides.
#[test]
fn receiver_drop_after_poll_vs_send() {
    loom::model(|| {
        let drops = DropCounter::default();
        let (tx, mut rx) = oneshot::channel::<Value>();
        let sent = value(&drops, 6);
        let sender = thread::spawn(move || tx.send(sent).is_err());
        let (wakes, waker) = CountingWaker::new();
        let first = poll_once(&mut rx, &waker).map(|v| v.map(|v| v.get_ref().id));
        drop(rx);
        let handed_back = sender.join().unwrap();
        match first {
            Poll::Ready(Ok(6)) => assert!(!handed_back),
            Poll::Pending => assert!(wakes.wakes() <= 1),
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(drops.drops(), 1);
    });
}

/// A timed receive with nobody sending yet times out, and the receiver still works after.
///
/// Catches: a timeout that never fires (loom stops the endless wait at its branch limit); a
/// timeout that leaves the channel in a state where the later send or receive breaks.
#[test]
fn timeout_then_send() {
    loom::model(|| {
        let (tx, mut rx) = oneshot::channel::<u32>();
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(3600)),
            Err(RecvTimeoutError::Timeout)
        );
        let sender = thread::spawn(move || tx.send(12).map_err(|_| "receiver gone"));
        assert_eq!(rx.recv_blocking(), Ok(12));
        sender.join().unwrap().unwrap();
    });
}

/// Both handles dropped at once, with the receiver registered or not: exactly one of them
/// frees the channel.
///
/// Catches: both sides reading the other's DISCONNECTED and freeing twice (poisoned state),
/// or neither freeing (loom's allocation tracking reports the leak).
#[test]
fn sender_drop_vs_receiver_drop() {
    loom::model(|| {
        let (tx, mut rx) = oneshot::channel::<Value>();
        let sender = thread::spawn(move || drop(tx));
        let (_wakes, waker) = CountingWaker::new();
        let _ = poll_once(&mut rx, &waker);
        drop(rx);
        sender.join().unwrap();
    });
}

/// An abandoned receiver against a producer that checks `is_closed` and sends: the producer
/// never sees a close, the value comes back to it, and the channel is freed once.
///
/// Catches: abandon implemented as a drop (the producer would see `is_closed`); an abandoned
/// channel that neither side frees (allocation leak) or both free (poisoned state).
#[test]
fn abandon_vs_send() {
    loom::model(|| {
        let drops = DropCounter::default();
        let (tx, mut rx) = oneshot::channel::<Value>();
        let sent = value(&drops, 4);
        let counter = drops.clone();
        let sender = thread::spawn(move || {
            assert!(!tx.is_closed(), "an abandoned receiver read as closed");
            match tx.send(sent) {
                Ok(()) => {}
                Err(back) => {
                    assert_eq!(counter.drops(), 0);
                    drop(back);
                }
            }
        });
        let (_wakes, waker) = CountingWaker::new();
        let _ = poll_once(&mut rx, &waker);
        rx.abandon();
        sender.join().unwrap();
        assert_eq!(drops.drops(), 1);
    });
}

/// The waker is replaced between two polls while the send races both.
///
/// Catches: a re-poll that keeps the first waker (the task that moved is never woken); a
/// re-poll that overwrites the waker slot while the sender reads it (loom reports the race
/// on the slot); a stale waker leaked on replacement.
#[test]
fn waker_replaced_between_polls() {
    loom::model(|| {
        let drops = DropCounter::default();
        let (tx, mut rx) = oneshot::channel::<Value>();
        let sent = value(&drops, 2);
        let sender = thread::spawn(move || tx.send(sent).map_err(|_| "receiver gone"));
        let (first, first_waker) = CountingWaker::new();
        let (second, second_waker) = CountingWaker::new();
        let mut got = None;
        if let Poll::Ready(v) = poll_once(&mut rx, &first_waker) {
            got = Some(v.expect("value"));
        }
        let second_pending = match got {
            Some(_) => false,
            None => match poll_once(&mut rx, &second_waker) {
                Poll::Ready(v) => {
                    got = Some(v.expect("value"));
                    false
                }
                Poll::Pending => true,
            },
        };
        sender.join().unwrap().unwrap();
        if second_pending {
            assert_eq!(second.wakes(), 1, "the latest waker must be woken");
            match poll_once(&mut rx, &second_waker) {
                Poll::Ready(Ok(v)) => got = Some(v),
                other => panic!("expected the value, got {other:?}"),
            }
        }
        assert!(first.wakes() <= 1);
        assert_eq!(got.expect("value").get_ref().id, 2);
        drop(rx);
        assert_eq!(drops.drops(), 1);
    });
}

/// A receive that mixes the conventions on one handle against a send: poll, then a timed
/// receive, then a poll again.
///
/// Catches: a task waker left in the slot when the blocking receive takes over (the sender
/// would wake a stale task and never unpark the thread: deadlock or lost value).
#[test]
fn poll_then_timeout_then_poll_vs_send() {
    loom::model(|| {
        let (tx, mut rx) = oneshot::channel::<u32>();
        let sender = thread::spawn(move || tx.send(11).map_err(|_| "receiver gone"));
        let (_wakes, waker) = CountingWaker::new();
        let mut got = match poll_once(&mut rx, &waker) {
            Poll::Ready(v) => Some(v.unwrap()),
            Poll::Pending => match rx.recv_timeout(Duration::from_secs(3600)) {
                Ok(v) => Some(v),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Closed) => panic!("closed although the sender sends"),
            },
        };
        sender.join().unwrap().unwrap();
        if got.is_none() {
            got = match poll_once(&mut rx, &waker) {
                Poll::Ready(v) => Some(v.unwrap()),
                Poll::Pending => panic!("pending after the sender finished"),
            };
        }
        assert_eq!(got, Some(11));
    });
}

/// `block_on` parks on its own wake flag; the oneshot's send wakes it.
///
/// Catches: a wake flag that is cleared after the poll instead of consumed before the park
/// (lost wake-up: deadlock); a Relaxed flag (the value read after the wake races).
#[test]
fn block_on_vs_send() {
    loom::model(|| {
        let (tx, rx) = oneshot::channel::<u32>();
        let sender = thread::spawn(move || tx.send(4).map_err(|_| "receiver gone"));
        assert_eq!(bridge_core::block_on(rx), Ok(4));
        sender.join().unwrap().unwrap();
    });
}

/// A nested `block_on` parks the same thread while the outer call's wake-up arrives.
///
/// The outer future registers on `outer`, then runs a nested `block_on` on `inner`, then
/// returns Pending without polling `outer` again. If the outer wake were a bare unpark, the
/// nested park could consume it and the outer call would sleep forever (loom: deadlock).
/// With a flag per wait the outer call sees its flag and polls again.
#[test]
fn nested_block_on_keeps_outer_wakeup() {
    loom::model(|| {
        let (outer_tx, outer_rx) = oneshot::channel::<u32>();
        let (inner_tx, inner_rx) = oneshot::channel::<u32>();
        let a = thread::spawn(move || outer_tx.send(1).map_err(|_| "receiver gone"));
        let b = thread::spawn(move || inner_tx.send(2).map_err(|_| "receiver gone"));

        struct Outer {
            outer: oneshot::Receiver<u32>,
            inner: Option<oneshot::Receiver<u32>>,
        }
        impl Future for Outer {
            type Output = (u32, u32);
            fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<(u32, u32)> {
                let this = &mut *self;
                if let Some(inner) = this.inner.take() {
                    if let Poll::Ready(v) = Pin::new(&mut this.outer).poll(cx) {
                        let w = bridge_core::block_on(inner).unwrap();
                        return Poll::Ready((v.unwrap(), w));
                    }
                    let w = bridge_core::block_on(inner).unwrap();
                    assert_eq!(w, 2);
                    return Poll::Pending;
                }
                Pin::new(&mut this.outer).poll(cx).map(|v| (v.unwrap(), 2))
            }
        }

        let got = bridge_core::block_on(Outer {
            outer: outer_rx,
            inner: Some(inner_rx),
        });
        assert_eq!(got, (1, 2));
        a.join().unwrap().unwrap();
        b.join().unwrap().unwrap();
    });
}

/// An earlier poll registered a task's waker; then the thread drives the same receiver with
/// `block_on` while the send races it. Covers the hand-over in every phase: the sender takes
/// the task's waker before, during or after `block_on`'s poll reclaims it, and in particular
/// `block_on`'s poll finds `UNPARKING` (the sender holds the old waker, not `block_on`'s), so
/// the poll wakes `block_on` itself and `block_on` must wait the sender's last step out.
///
/// Catches: `block_on` re-polling at once after a poll that woke it (`spin-on-unparking`):
/// with the sender stalled between its two steps that is an endless busy loop, which loom
/// reports by exceeding its branch limit.
#[test]
fn task_waker_then_block_on_vs_send() {
    loom::model(|| {
        let (tx, mut rx) = oneshot::channel::<u32>();
        let sender = thread::spawn(move || tx.send(9).map_err(|_| "receiver gone"));
        let (wakes, waker) = CountingWaker::new();
        let got = match poll_once(&mut rx, &waker) {
            Poll::Ready(v) => v,
            Poll::Pending => bridge_core::block_on(&mut rx),
        };
        assert_eq!(got, Ok(9));
        sender.join().unwrap().unwrap();
        // The task's waker was either reclaimed by block_on's poll (never woken) or taken by
        // the sender (woken once).
        assert!(wakes.wakes() <= 1);
        assert!(matches!(
            poll_once(&mut rx, &waker),
            Poll::Ready(Err(RecvError))
        ));
    });
}

/// The sender's thread unparks the receiver's thread (a stray unpark, as another wait on
/// that thread could leave behind) and then sends, against a blocking receive. Covers a
/// registered receiver that wakes with the state still `RECEIVING` and parks again (or takes
/// the stray unpark before it even parks), in every order against the send's two steps.
///
/// Catches: a receiver that takes any wake-up as the value or the close (it reads an empty
/// slot: loom reports the uninitialized read or the value is wrong) or that stops waiting
/// (the `recv_blocking` returns an error).
#[test]
fn stray_unpark_then_send_vs_recv_blocking() {
    loom::model(|| {
        let drops = DropCounter::default();
        let (tx, rx) = oneshot::channel::<Value>();
        let sent = value(&drops, 10);
        let receiver = thread::current();
        let sender = thread::spawn(move || {
            receiver.unpark();
            tx.send(sent).map_err(|_| "receiver gone")
        });
        let got = rx.recv_blocking().expect("the value");
        assert_eq!(got.get_ref().id, 10);
        sender.join().unwrap().unwrap();
        drop(got);
        assert_eq!(drops.drops(), 1);
    });
}

/// `block_on` of a future that waits on two channels with the same waker, against one
/// thread that sends on both: the two wake-ups reach one wake flag, in every order against
/// `block_on`'s polls and parks. Covers the parker's `unpark` finding the flag already set
/// (both wake-ups land before `block_on` consumes the first) and `park` finding it set.
///
/// Catches: a second wake-up that clears or toggles the flag instead of leaving it set
/// (`block_on` sleeps forever: loom reports the deadlock), and a wake-up that `block_on`
/// consumes without polling again (the same).
#[test]
fn two_wakes_before_block_on_parks() {
    struct Both {
        a: oneshot::Receiver<u32>,
        b: oneshot::Receiver<u32>,
        got: (Option<u32>, Option<u32>),
        polls: usize,
    }
    impl Future for Both {
        type Output = (u32, u32, usize);
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            let this = &mut *self;
            this.polls += 1;
            if this.got.0.is_none() {
                if let Poll::Ready(v) = Pin::new(&mut this.a).poll(cx) {
                    this.got.0 = Some(v.unwrap());
                }
            }
            if this.got.1.is_none() {
                if let Poll::Ready(v) = Pin::new(&mut this.b).poll(cx) {
                    this.got.1 = Some(v.unwrap());
                }
            }
            match this.got {
                (Some(a), Some(b)) => Poll::Ready((a, b, this.polls)),
                _ => Poll::Pending,
            }
        }
    }

    loom::model(|| {
        let (tx_a, a) = oneshot::channel::<u32>();
        let (tx_b, b) = oneshot::channel::<u32>();
        let sender = thread::spawn(move || {
            tx_a.send(1).map_err(|_| "receiver gone")?;
            tx_b.send(2).map_err(|_| "receiver gone")
        });
        let (a, b, polls) = bridge_core::block_on(Both {
            a,
            b,
            got: (None, None),
            polls: 0,
        });
        assert_eq!((a, b), (1, 2));
        // One poll per wake-up at most, plus the first: two wake-ups that met in the flag
        // make one poll, never an extra spin.
        assert!(polls <= 3, "{polls} polls");
        // Not joined: the sender's last unpark may still be on its way, and loom (0.7) takes
        // an unpark that lands while this thread waits in `join` for the joined thread's
        // exit, and fails its own assertion. Both values arrived, so both sends succeeded.
        drop(sender);
    });
}

/// A task polls twice with the same waker (say it was woken by something else), while the
/// send races both polls. Covers the re-poll that finds its own registration and keeps the
/// stored waker rather than cloning the new one, and the send landing between the polls.
///
/// Catches: a re-poll that drops the registration (the send after it wakes nobody: the
/// wake count stays 0), or that clones the waker again (the clone count goes to 2).
#[test]
fn repoll_same_waker_vs_send() {
    loom::model(|| {
        let (tx, mut rx) = oneshot::channel::<u32>();
        let sender = thread::spawn(move || tx.send(3).map_err(|_| "receiver gone"));
        let (counts, waker) = counted_waker();
        let mut got = None;
        for _ in 0..2 {
            if let Poll::Ready(v) = poll_once(&mut rx, &waker) {
                got = Some(v.unwrap());
                break;
            }
        }
        sender.join().unwrap().unwrap();
        assert!(counts.clones() <= 1, "{} clones", counts.clones());
        if got.is_none() {
            // The send's wake-up, and one more if the second poll found the sender between
            // its two steps (that poll wakes its own waker to be polled again).
            assert!(
                (1..=2).contains(&counts.wakes()),
                "the registered waker must be woken, got {} wakes",
                counts.wakes()
            );
            got = match poll_once(&mut rx, &waker) {
                Poll::Ready(v) => Some(v.unwrap()),
                Poll::Pending => panic!("pending after the send was woken"),
            };
        }
        assert_eq!(got, Some(3));
    });
}

/// A task registered by a poll, then `try_recv` in a loop against a send: `try_recv` sees
/// `RECEIVING` (registered, nothing sent), `UNPARKING` (the sender between taking the waker
/// and its final store) and then the value.
///
/// Catches: `try_recv` reading the value slot before the final store (it reads an
/// unwritten slot: loom reports the race) or mistaking `UNPARKING` for a close.
#[test]
fn poll_then_try_recv_vs_send() {
    loom::model(|| {
        let drops = DropCounter::default();
        let (tx, mut rx) = oneshot::channel::<Value>();
        let sent = value(&drops, 12);
        let sender = thread::spawn(move || tx.send(sent).map_err(|_| "receiver gone"));
        let (wakes, waker) = CountingWaker::new();
        let got = match poll_once(&mut rx, &waker) {
            Poll::Ready(v) => v.expect("value"),
            Poll::Pending => loop {
                match rx.try_recv() {
                    Ok(v) => break v,
                    Err(TryRecvError::Empty) => thread::yield_now(),
                    Err(TryRecvError::Closed) => panic!("closed although the sender sends"),
                }
            },
        };
        assert_eq!(got.get_ref().id, 12);
        sender.join().unwrap().unwrap();
        assert!(wakes.wakes() <= 1);
        drop((got, rx));
        assert_eq!(drops.drops(), 1);
    });
}

/// A receiver abandoned (after a poll, or not) against a sender that is dropped without
/// sending: whichever comes second frees the channel, and the sender's drop on an
/// abandoned channel is the last handle.
///
/// Catches: a sender drop that reads `ABANDONED` as a live receiver (nobody frees: loom's
/// allocation tracking reports the leak), or an abandon after the sender's drop that does
/// not free (the same), or both freeing (poisoned state).
#[test]
fn abandon_vs_sender_drop() {
    loom::model(|| {
        let (tx, mut rx) = oneshot::channel::<Value>();
        let sender = thread::spawn(move || drop(tx));
        let (_wakes, waker) = CountingWaker::new();
        let _ = poll_once(&mut rx, &waker);
        rx.abandon();
        sender.join().unwrap();
    });
}

/// A deadline that has already passed against a send: one look, no spin, no park; the
/// value if it is there, else a timeout, and the receiver still works after.
///
/// Catches: a passed deadline that parks anyway and loses the race with the send's wake
/// (loom reports the deadlock) or a timeout that leaves its registration behind.
#[test]
fn passed_deadline_vs_send() {
    loom::model(|| {
        let (tx, mut rx) = oneshot::channel::<u32>();
        let sender = thread::spawn(move || tx.send(5).map_err(|_| "receiver gone"));
        let got = match rx.recv_deadline(Instant::now()) {
            Ok(v) => v,
            Err(RecvTimeoutError::Timeout) => rx.recv_blocking().unwrap(),
            Err(RecvTimeoutError::Closed) => panic!("closed although the sender sends"),
        };
        assert_eq!(got, 5);
        sender.join().unwrap().unwrap();
    });
}

/// `block_on` with a deadline against a send: the value comes in time (the timed park is
/// woken, before or just as the deadline passes) or the deadline wins and the receiver is
/// dropped with the future, leaving the value to the sender's side. Either way the value is
/// dropped exactly once.
///
/// Catches: a timed park that gives up with its flag set (a value sent in time reported as
/// expired, then the flag left set for the next call: the last look at the flag in
/// `park_deadline`); a future kept alive past its deadline (the leak check).
#[test]
fn block_on_deadline_vs_send() {
    loom::model(|| {
        let drops = DropCounter::default();
        let (tx, rx) = oneshot::channel::<Value>();
        let sent = value(&drops, 1);
        // Not joined: a late unpark that reaches a thread waiting in `join` trips an internal
        // assertion of loom 0.7. The leak check still sees a value nobody dropped.
        thread::spawn(move || drop(tx.send(sent)));
        let far = Instant::now() + Duration::from_secs(3600);
        match bridge_core::block_on_deadline(rx, far) {
            Some(Ok(got)) => drop(got),
            Some(Err(RecvError)) => panic!("the sender sends"),
            None => {}
        }
        assert!(drops.drops() <= 1);
    });
}

/// A closure that borrows from the caller's stack, run on another thread by
/// `run_elsewhere`, against a caller that stops waiting at once (loom's timed wait expires
/// after a yield): the closure either runs or is dropped unrun, and in both cases
/// `run_elsewhere` returns only after the closure is done with what it borrows. The caller
/// marks the borrowed value dead right after the call returns, and the closure checks it on
/// each use.
///
/// Catches: a `run_elsewhere` that returns as soon as `wait` does (the closure then sees the
/// value dead, or the model reports the racing access); a dropped job that closes its channel
/// before dropping the closure (a drop that checks the mark).
#[test]
fn run_elsewhere_returns_only_after_the_job_is_done() {
    use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::cell::Cell;

    /// Checks the borrowed mark when dropped.
    struct Borrower<'a>(&'a AtomicBool);
    impl Drop for Borrower<'_> {
        fn drop(&mut self) {
            assert!(self.0.load(SeqCst), "a borrow outlived run_elsewhere");
        }
    }

    for run_it in [true, false] {
        loom::model(move || {
            let alive = AtomicBool::new(true);
            let borrower = Borrower(&alive);
            let ran = Cell::new(false);
            let got = bridge_core::scoped::run_elsewhere(
                move || {
                    assert!(borrower.0.load(SeqCst), "the closure ran after the call");
                    drop(borrower);
                    7
                },
                |job| {
                    ran.set(run_it);
                    thread::spawn(move || {
                        if run_it {
                            job.run(&|| ());
                        } else {
                            drop(job);
                        }
                    });
                },
                // Stops waiting at once: loom's timed park expires after a yield.
                |pending| pending.recv_until(Some(Instant::now())).ok(),
            );
            alive.store(false, SeqCst);
            if !ran.get() {
                assert_eq!(got, None);
            }
        });
    }
}

/// The drop order of `run_elsewhere`'s job on the paths that unwind, against the caller's
/// wait: a job dropped unrun whose closure panics in its drop (the panic caught on the
/// thread that drops it), and a job run whose `before_delivery` panics after the closure
/// returned a borrowing result. The closure's captures, or the result, hold a borrow whose
/// drop checks that the call has not returned; the caller marks it dead right after the call.
///
/// Catches: a sender leaked while the closure's drop unwinds (the caller waits forever:
/// loom reports the deadlock, or the leaked channel); a sender dropped before the closure or
/// the result (the caller returns first, and the borrow's drop sees it dead).
#[test]
fn run_elsewhere_drops_the_sender_last_even_when_a_drop_unwinds() {
    use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::panic::{self, AssertUnwindSafe};

    /// Checks the borrowed mark when dropped.
    struct Borrower<'a>(&'a AtomicBool);
    impl Drop for Borrower<'_> {
        fn drop(&mut self) {
            assert!(self.0.load(SeqCst), "a borrow outlived run_elsewhere");
        }
    }
    /// Panics when dropped.
    struct PanicsOnDrop;
    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            panic::panic_any("in the closure's drop");
        }
    }
    /// The closure's captures: the borrow drops (and checks) before the bomb panics, as
    /// fields drop in declaration order. No bomb where the job runs: the closure's own drop
    /// of its captures is not the unwind under test there.
    struct Captures<'a> {
        _borrower: Borrower<'a>,
        _bomb: Option<PanicsOnDrop>,
    }

    for run_it in [false, true] {
        loom::model(move || {
            let alive = AtomicBool::new(true);
            let captures = Captures {
                _borrower: Borrower(&alive),
                // Not `then_some`, which would build the bomb (and drop it) either way.
                _bomb: if run_it { None } else { Some(PanicsOnDrop) },
            };
            let result = Borrower(&alive);
            let got = bridge_core::scoped::run_elsewhere(
                move || {
                    drop(captures);
                    result
                },
                |job| {
                    thread::spawn(move || {
                        let unwound = panic::catch_unwind(AssertUnwindSafe(|| {
                            if run_it {
                                job.run(&|| panic::panic_any("in before_delivery"));
                            } else {
                                drop(job);
                            }
                        }));
                        assert!(unwound.is_err(), "the drop or the callback panics");
                    });
                },
                |pending| pending.recv_until(None).map(drop),
            );
            alive.store(false, SeqCst);
            assert_eq!(got, Err(RecvTimeoutError::Closed));
        });
    }
}
