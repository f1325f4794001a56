//! `scoped::run_elsewhere`: a closure that borrows from the caller's stack runs on another
//! thread, and the call returns (or unwinds) only once the closure is done with its borrows,
//! on every path: run to its end, given up on by the caller, dropped unrun, panicking, and a
//! hand-over that panics.

use bridge_core::oneshot::RecvTimeoutError;
use bridge_core::scoped::run_elsewhere;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::thread;
use std::time::{Duration, Instant};

/// Sets its flag when dropped; the test checks the flag right after the call returns.
struct DropMark<'a>(&'a AtomicBool);

impl Drop for DropMark<'_> {
    fn drop(&mut self) {
        self.0.store(true, SeqCst);
    }
}

fn on_a_thread(job: bridge_core::scoped::Erased) {
    thread::spawn(move || job.run(&|| ()));
}

#[test]
fn a_borrowing_closure_runs_elsewhere_and_its_writes_are_seen() {
    let mut data = vec![1, 2, 3];
    let sum = run_elsewhere(
        || {
            data.push(4);
            data.iter().sum::<i32>()
        },
        on_a_thread,
        |pending| pending.recv_until(None),
    );
    assert_eq!(sum, Ok(10));
    assert_eq!(data, [1, 2, 3, 4]);
}

/// The caller stops waiting at once; the closure sleeps, then writes through its borrow. The
/// call still returns only after the write, and the result it gave up on is dropped before.
#[test]
fn a_caller_that_stops_waiting_still_waits_for_the_borrow() {
    for _ in 0..20 {
        let written = AtomicUsize::new(0);
        let result_dropped = AtomicBool::new(false);
        let start = Instant::now();
        let waited = run_elsewhere(
            || {
                thread::sleep(Duration::from_millis(5));
                written.store(1, SeqCst);
                DropMark(&result_dropped)
            },
            on_a_thread,
            |pending| pending.recv_until(Some(Instant::now())).map(drop),
        );
        assert_eq!(waited, Err(RecvTimeoutError::Timeout));
        assert_eq!(written.load(SeqCst), 1);
        assert!(result_dropped.load(SeqCst));
        assert!(start.elapsed() >= Duration::from_millis(5));
    }
}

#[test]
fn a_job_dropped_unrun_drops_its_borrows_before_the_call_returns() {
    let dropped = AtomicBool::new(false);
    let mark = DropMark(&dropped);
    let got = run_elsewhere(
        move || {
            let _mark = mark;
            1
        },
        |job| {
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(5));
                drop(job);
            });
        },
        |pending| pending.recv_until(None),
    );
    assert_eq!(got, Err(RecvTimeoutError::Closed));
    assert!(dropped.load(SeqCst));
}

#[test]
fn a_panicking_closure_drops_its_borrows_before_the_call_returns() {
    let dropped = AtomicBool::new(false);
    let mark = DropMark(&dropped);
    let got = run_elsewhere(
        move || -> u8 {
            let _mark = mark;
            panic::panic_any("in the closure")
        },
        |job| {
            thread::spawn(move || {
                let _ = panic::catch_unwind(AssertUnwindSafe(|| job.run(&|| ())));
            });
        },
        |pending| pending.recv_until(None),
    );
    assert_eq!(got, Err(RecvTimeoutError::Closed));
    assert!(dropped.load(SeqCst));
}

/// A hand-over that panics after giving the job to a thread: the unwind waits for the job.
#[test]
fn a_panicking_hand_over_unwinds_only_after_the_job() {
    let written = AtomicUsize::new(0);
    let unwound = panic::catch_unwind(AssertUnwindSafe(|| {
        run_elsewhere(
            || {
                thread::sleep(Duration::from_millis(5));
                written.store(1, SeqCst);
            },
            |job| {
                on_a_thread(job);
                panic::panic_any("in the hand-over");
            },
            |pending| pending.recv_until(None),
        )
    }));
    assert!(unwound.is_err());
    assert_eq!(written.load(SeqCst), 1);
}

/// Panics when dropped.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic::panic_any("in the closure's drop");
    }
}

/// What a closure captures: the mark is dropped (and sets its flag) before the bomb panics,
/// as fields drop in declaration order.
struct Captures<'a> {
    _mark: DropMark<'a>,
    _bomb: PanicsOnDrop,
}

/// Runs `f` on a thread of its own and gives its outcome; fails the test if it takes more
/// than 10 s (a liveness limit: the call under test either returns at once or never).
fn within_10s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    thread::spawn(move || done_tx.send(f()));
    done_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("run_elsewhere hung: the job's sender was leaked")
}

/// A job dropped unrun whose closure panics in its drop: as a pool that cannot start a
/// thread drops it, in the hand-over on the caller's own thread (the call unwinds with the
/// drop's panic), or on another thread (the call sees the channel closed). Either way the
/// closure's other captures are dropped, the sender is dropped after them, and the call
/// ends: a sender leaked by the unwinding drop left it waiting forever.
#[test]
fn a_closure_whose_drop_panics_still_lets_the_call_end() {
    let unwound = within_10s(|| {
        let dropped = AtomicBool::new(false);
        let captures = Captures {
            _mark: DropMark(&dropped),
            _bomb: PanicsOnDrop,
        };
        let unwound = panic::catch_unwind(AssertUnwindSafe(|| {
            run_elsewhere(
                move || {
                    let _captures = captures;
                    1
                },
                drop,
                |pending| pending.recv_until(None),
            )
        }));
        assert!(dropped.load(SeqCst), "the other captures were leaked");
        unwound.map_err(|payload| payload.downcast_ref::<&str>().copied())
    });
    assert_eq!(unwound, Err(Some("in the closure's drop")));

    let got = within_10s(|| {
        let dropped = AtomicBool::new(false);
        let captures = Captures {
            _mark: DropMark(&dropped),
            _bomb: PanicsOnDrop,
        };
        let got = run_elsewhere(
            move || {
                let _captures = captures;
                1
            },
            |job| {
                thread::spawn(move || {
                    let dropping = panic::catch_unwind(AssertUnwindSafe(|| drop(job)));
                    assert!(dropping.is_err(), "the closure's drop panics");
                });
            },
            |pending| pending.recv_until(None),
        );
        assert!(dropped.load(SeqCst), "the other captures were leaked");
        got
    });
    assert_eq!(got, Err(RecvTimeoutError::Closed));
}
