//! The runtime-free `block_on`.

use bridge_core::{block_on, oneshot};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::thread;
use std::time::Duration;

#[test]
fn returns_a_ready_output() {
    assert_eq!(block_on(async { 40 + 2 }), 42);
}

/// A future that is pending `n` times, waking itself each time.
struct YieldN(u32);

impl Future for YieldN {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 == 0 {
            return Poll::Ready(());
        }
        self.0 -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[test]
fn drives_a_self_waking_future() {
    block_on(YieldN(1000));
}

#[test]
fn wakes_from_another_thread() {
    let (tx, rx) = oneshot::channel();
    let sender = thread::spawn(move || {
        thread::sleep(Duration::from_millis(10));
        tx.send(1).unwrap();
    });
    assert_eq!(block_on(rx), Ok(1));
    sender.join().unwrap();
}

#[test]
fn nests_to_depth() {
    fn nest(depth: u32) -> u32 {
        if depth == 0 {
            let (tx, rx) = oneshot::channel();
            thread::spawn(move || tx.send(1).unwrap());
            return block_on(rx).unwrap();
        }
        block_on(async move { nest(depth - 1) + 1 })
    }
    assert_eq!(nest(16), 17);
}

/// The outer call's wake-up arrives while a nested call parks the same thread. With a bare
/// park/unpark waker the nested park would swallow it and the outer call would hang.
#[test]
fn a_nested_park_does_not_swallow_the_outer_wakeup() {
    for _ in 0..200 {
        let (outer_tx, mut outer_rx) = oneshot::channel::<u8>();
        let (inner_tx, inner_rx) = oneshot::channel::<u8>();
        let mut pending = Some((outer_tx, inner_tx, inner_rx));
        let got = block_on(std::future::poll_fn(move |cx| {
            if let Poll::Ready(v) = Pin::new(&mut outer_rx).poll(cx) {
                return Poll::Ready(v);
            }
            if let Some((outer_tx, inner_tx, inner_rx)) = pending.take() {
                // The outer sender fires first, then the inner one, both while this thread
                // is parked in the nested call. The outer future is not polled again until
                // the outer call sees its own flag.
                let senders = thread::spawn(move || {
                    outer_tx.send(1).unwrap();
                    thread::sleep(Duration::from_micros(50));
                    inner_tx.send(2).unwrap();
                });
                assert_eq!(block_on(inner_rx), Ok(2));
                senders.join().unwrap();
            }
            Poll::Pending
        }));
        assert_eq!(got, Ok(1));
    }
}

#[test]
fn a_panicking_future_propagates_and_the_thread_stays_usable() {
    let caught = std::panic::catch_unwind(|| block_on(async { panic!("boom") }));
    let payload = caught.unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
    assert_eq!(block_on(async { 7 }), 7);
    block_on(YieldN(10));
}

#[test]
fn a_waker_that_outlives_its_call_only_causes_a_spurious_poll() {
    let mut kept = None;
    block_on(std::future::poll_fn(|cx| {
        kept = Some(cx.waker().clone());
        Poll::Ready(())
    }));
    let (tx, rx) = oneshot::channel();
    let sender = thread::spawn(move || {
        thread::sleep(Duration::from_millis(5));
        tx.send(3).unwrap();
    });
    // The stale waker fires while the next call waits: at most one extra poll.
    kept.unwrap().wake();
    assert_eq!(block_on(rx), Ok(3));
    sender.join().unwrap();
}

/// Counts how often `block_on` polls a receiver whose value another thread sends 10 ms
/// after the first poll registered the waker.
fn polls_for_one_cross_thread_send() -> usize {
    let (tx, mut rx) = oneshot::channel();
    let (registered, wait_for_registration) = std::sync::mpsc::channel();
    let sender = thread::spawn(move || {
        wait_for_registration.recv().unwrap();
        thread::sleep(Duration::from_millis(10));
        tx.send(1).unwrap();
    });
    let mut polls = 0;
    let got = block_on(std::future::poll_fn(|cx| {
        polls += 1;
        let poll = Pin::new(&mut rx).poll(cx);
        if polls == 1 {
            registered.send(()).unwrap();
        }
        poll
    }));
    assert_eq!(got, Ok(1));
    sender.join().unwrap();
    polls
}

#[test]
fn it_sleeps_between_polls_until_woken() {
    // The first poll registers, the send wakes, the second poll takes the value. A
    // `block_on` that spun instead of parking would poll thousands of times.
    assert_eq!(polls_for_one_cross_thread_send(), 2);
}

#[test]
fn a_wakeup_left_over_from_an_earlier_call_does_not_reach_the_next_one() {
    let mut kept = None;
    block_on(std::future::poll_fn(|cx| {
        kept = Some(cx.waker().clone());
        Poll::Ready(())
    }));
    // The finished call's waker fires now, setting the flag the thread keeps cached...
    kept.unwrap().wake();
    // ...and the next call starts from a cleared flag: no spurious second poll.
    assert_eq!(polls_for_one_cross_thread_send(), 2);
}

/// A deadline passes for a future that wakes itself at every poll, which never lets the
/// loop park: the wait ends at the deadline all the same.
#[test]
fn a_deadline_passes_for_a_future_that_always_wakes_itself() {
    let (tx, rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let soon = std::time::Instant::now() + Duration::from_millis(20);
        let spinning = std::future::poll_fn(|cx| {
            cx.waker().wake_by_ref();
            Poll::<()>::Pending
        });
        let _ = tx.send(bridge_core::block_on_deadline(spinning, soon));
    });
    let outcome = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the deadline never ended the wait");
    assert_eq!(outcome, None);
}
