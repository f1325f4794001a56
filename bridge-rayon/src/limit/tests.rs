//! The limit's queue driven by hand, through its internal permits and waiters (`acquire`,
//! `acquire_blocking`, `try_acquire`, `line_up`), which are not part of the API: a sequential model of
//! the queue under random schedules, and the exact extent of the blocking waiter's exception
//! to first come, first served. `tests/limit.rs` runs the same rules through real tasks, and
//! the loom models through their interleavings.

use super::{Acquire, Limit, Permit};
use futures::FutureExt;
use proptest::prelude::*;
use std::collections::VecDeque;
use std::task::{Context, Poll, Waker};
use std::thread;

// Random schedules on a `Limit` of 1..4 against a sequential model of it: waiters queue
// (at their first poll, or at once in a spawn's call: `line_up`), are polled, are dropped
// (queued or granted); permits are taken by `try` (or by a `line_up` that finds room),
// and given back by a task's end or its cancel (both drop the permit the job carries, so
// they are one step here; tests/limit.rs and the loom models run them through real jobs).
//
// Checked after every step: `in_flight` equals the model's and never exceeds the bound;
// `try` succeeds exactly when the model has free room; a waiter is ready exactly when the
// model granted it, which is in FIFO order of queueing; at the end, every permit came
// back (the bound's worth of `try`s succeed again).

#[derive(Debug, Clone)]
enum Step {
    /// A new waiter, polled once.
    Acquire,
    /// A spawn's call: room now, or a waiter queued at once, not polled yet.
    LineUp,
    /// `try`.
    Try,
    /// Poll the waiter at this index (modulo the live ones).
    Poll(usize),
    /// Drop the waiter at this index.
    DropWaiter(usize),
    /// Give back the permit at this index (a task's end, or its cancel).
    Release(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => Just(Step::Acquire),
        2 => Just(Step::LineUp),
        2 => Just(Step::Try),
        2 => any::<usize>().prop_map(Step::Poll),
        1 => any::<usize>().prop_map(Step::DropWaiter),
        3 => any::<usize>().prop_map(Step::Release),
    ]
}

/// The model: permits out, and the waiters (by number) queued and granted.
struct Model {
    in_flight: usize,
    queue: VecDeque<usize>,
    granted: Vec<usize>,
}

impl Model {
    fn release(&mut self) {
        match self.queue.pop_front() {
            Some(next) => self.granted.push(next),
            None => self.in_flight -= 1,
        }
    }
}

proptest! {
    #[test]
    fn limit_matches_the_sequential_model(
        max in 1usize..=4,
        steps in proptest::collection::vec(step(), 1..60),
    ) {
        let limit = Limit::new(max);
        let mut model = Model { in_flight: 0, queue: VecDeque::new(), granted: Vec::new() };
        let mut cx = Context::from_waker(Waker::noop());
        let mut waiters: Vec<(usize, Acquire)> = Vec::new();
        let mut permits: Vec<Permit> = Vec::new();
        let mut grant_order = Vec::new();
        let mut next = 0;
        for step in steps {
            match step {
                Step::Acquire => {
                    let mut waiter = limit.acquire();
                    let n = next;
                    next += 1;
                    match waiter.poll_unpin(&mut cx) {
                        Poll::Ready(permit) => {
                            prop_assert!(model.in_flight < max && model.queue.is_empty());
                            model.in_flight += 1;
                            grant_order.push(n);
                            permits.push(permit);
                        }
                        Poll::Pending => {
                            prop_assert_eq!(model.in_flight, max, "queued with room free");
                            model.queue.push_back(n);
                            waiters.push((n, waiter));
                        }
                    }
                }
                Step::LineUp => {
                    let n = next;
                    next += 1;
                    match limit.line_up() {
                        Ok(permit) => {
                            prop_assert!(model.in_flight < max && model.queue.is_empty());
                            model.in_flight += 1;
                            grant_order.push(n);
                            permits.push(permit);
                        }
                        Err(waiter) => {
                            prop_assert_eq!(model.in_flight, max, "queued with room free");
                            model.queue.push_back(n);
                            waiters.push((n, waiter));
                        }
                    }
                }
                Step::Try => match limit.try_acquire() {
                    Some(permit) => {
                        prop_assert!(model.in_flight < max, "try passed the bound");
                        model.in_flight += 1;
                        permits.push(permit);
                    }
                    None => prop_assert_eq!(model.in_flight, max, "try refused with room"),
                },
                Step::Poll(i) if !waiters.is_empty() => {
                    let at = i % waiters.len();
                    let n = waiters[at].0;
                    match waiters[at].1.poll_unpin(&mut cx) {
                        Poll::Ready(permit) => {
                            let g = model.granted.iter().position(|&g| g == n);
                            prop_assert!(g.is_some(), "waiter {} ready without a grant", n);
                            model.granted.swap_remove(g.unwrap());
                            // Done: its drop gives nothing back.
                            drop(waiters.remove(at));
                            permits.push(permit);
                        }
                        Poll::Pending => {
                            prop_assert!(model.queue.contains(&n), "granted waiter {} pending", n);
                        }
                    }
                }
                Step::DropWaiter(i) if !waiters.is_empty() => {
                    let (n, waiter) = waiters.remove(i % waiters.len());
                    drop(waiter);
                    if let Some(q) = model.queue.iter().position(|&q| q == n) {
                        model.queue.remove(q);
                    } else {
                        let g = model.granted.iter().position(|&g| g == n).unwrap();
                        model.granted.swap_remove(g);
                        let before = model.queue.front().copied();
                        model.release();
                        grant_order.extend(before);
                    }
                }
                Step::Release(i) if !permits.is_empty() => {
                    drop(permits.remove(i % permits.len()));
                    let before = model.queue.front().copied();
                    model.release();
                    grant_order.extend(before);
                }
                _ => {}
            }
            prop_assert_eq!(limit.in_flight(), model.in_flight);
            prop_assert!(limit.in_flight() <= max);
            // While waiters queue, all the room is out: nobody can pass them.
            prop_assert!(model.queue.is_empty() || model.in_flight == max);
        }
        // Grants to queued waiters went out in the order they queued.
        let queued_grants: Vec<_> = grant_order.to_vec();
        let mut sorted = queued_grants.clone();
        sorted.sort_unstable();
        prop_assert_eq!(queued_grants, sorted, "grants out of FIFO order");
        // Every permit comes back.
        drop(waiters);
        drop(permits);
        prop_assert_eq!(limit.in_flight(), 0);
        let again: Vec<_> = (0..max).map(|_| limit.try_acquire()).collect();
        prop_assert!(again.iter().all(Option::is_some));
        prop_assert!(limit.try_acquire().is_none());
    }
}

/// The exception to first come, first served is exact. A blocking waiter (polled by hand
/// here, as `spawn_or_wait` polls it while blocking this thread) passes only the async
/// waiters last polled on its own thread: never one of another thread, queued or granted;
/// and the waiters it passes keep their place for the next room.
#[test]
fn a_blocking_waiter_passes_only_the_async_waiters_of_its_own_thread() {
    let limit = Limit::new(1);
    let mut cx = Context::from_waker(Waker::noop());
    let polled_elsewhere = |mut waiter: Acquire| {
        thread::spawn(move || {
            let mut cx = Context::from_waker(Waker::noop());
            assert!(waiter.poll_unpin(&mut cx).is_pending());
            waiter
        })
        .join()
        .unwrap()
    };

    // Room granted to a waiter of another thread is not taken over.
    let first = limit.try_acquire().unwrap();
    let mut elsewhere = polled_elsewhere(limit.acquire());
    drop(first);
    let mut blocking = limit.acquire_blocking();
    assert!(
        blocking.poll_unpin(&mut cx).is_pending(),
        "took another thread's room"
    );
    let Poll::Ready(second) = elsewhere.poll_unpin(&mut cx) else {
        panic!("the granted waiter lost its room");
    };
    drop(second);
    let Poll::Ready(third) = blocking.poll_unpin(&mut cx) else {
        panic!("the blocking waiter did not get the next room");
    };

    // Queued in this order: a waiter of another thread, one of this thread, then this
    // thread's blocking waiter.
    let mut elsewhere = polled_elsewhere(limit.acquire());
    let mut here = limit.acquire();
    assert!(here.poll_unpin(&mut cx).is_pending());
    let mut blocking = limit.acquire_blocking();
    assert!(blocking.poll_unpin(&mut cx).is_pending());
    assert!(limit.try_acquire().is_none(), "a newcomer passed the queue");
    drop(third);
    // The oldest can take it: the other thread's waiter.
    assert!(here.poll_unpin(&mut cx).is_pending());
    assert!(blocking.poll_unpin(&mut cx).is_pending());
    let Poll::Ready(fourth) = elsewhere.poll_unpin(&mut cx) else {
        panic!("a waiter of another thread was passed");
    };
    drop(fourth);
    // This thread's async waiter is passed: the blocking waiter gets it.
    assert!(
        here.poll_unpin(&mut cx).is_pending(),
        "its thread is blocked"
    );
    let Poll::Ready(fifth) = blocking.poll_unpin(&mut cx) else {
        panic!("the blocking waiter waited behind an async waiter of its own thread");
    };
    drop(fifth);
    // The passed waiter kept its place: the next room is its.
    let Poll::Ready(sixth) = here.poll_unpin(&mut cx) else {
        panic!("the passed waiter lost its place");
    };
    drop(sixth);
    assert_eq!(limit.in_flight(), 0);
}

/// A waiter that a spawn's call queued (`line_up`) counts as an async waiter of the calling
/// thread until its first poll (which is where a task spawned from a pool's worker is
/// polled, if that worker is the pool's only one): this thread's blocking waiter passes it.
/// Once polled on another thread, it is that thread's, and it is not passed.
#[test]
fn a_waiter_queued_by_a_call_is_the_calling_threads_until_its_first_poll() {
    let limit = Limit::new(1);
    let mut cx = Context::from_waker(Waker::noop());

    let first = limit.try_acquire().unwrap();
    let mut here = limit.line_up().unwrap_err();
    let mut blocking = limit.acquire_blocking();
    assert!(blocking.poll_unpin(&mut cx).is_pending());
    drop(first);
    let Poll::Ready(second) = blocking.poll_unpin(&mut cx) else {
        panic!("the blocking waiter waited behind a waiter of its own thread");
    };
    drop(second);
    // The passed waiter kept its place: the next room is its.
    let Poll::Ready(third) = here.poll_unpin(&mut cx) else {
        panic!("the passed waiter lost its place");
    };

    let mut elsewhere = limit.line_up().unwrap_err();
    elsewhere = thread::spawn(move || {
        let mut cx = Context::from_waker(Waker::noop());
        assert!(elsewhere.poll_unpin(&mut cx).is_pending());
        elsewhere
    })
    .join()
    .unwrap();
    let mut blocking = limit.acquire_blocking();
    assert!(blocking.poll_unpin(&mut cx).is_pending());
    drop(third);
    assert!(
        blocking.poll_unpin(&mut cx).is_pending(),
        "passed a waiter of another thread"
    );
    let Poll::Ready(fourth) = elsewhere.poll_unpin(&mut cx) else {
        panic!("the waiter polled elsewhere lost its room");
    };
    drop(fourth);
    let Poll::Ready(fifth) = blocking.poll_unpin(&mut cx) else {
        panic!("the blocking waiter did not get the next room");
    };
    drop(fifth);
    assert_eq!(limit.in_flight(), 0);
}
