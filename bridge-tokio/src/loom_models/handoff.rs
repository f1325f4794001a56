//! loom models of the handoff protocol: the caller blocks on a oneshot while a loom thread,
//! standing in for the runtime's worker, runs (or drops) the job; and of the handoff pool,
//! whose workers are loom threads: submit vs. retire, the cap, the FIFO queue, nested submits.
//!
//! ```sh
//! RUSTFLAGS="--cfg bridge_loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p threadbridge-tokio --release --lib loom_models
//! ```
//!
//! The job is the future wrapped to catch its panic and send its outcome; the worker runs it
//! with bridge-core's `block_on` (the futures here need no reactor). bridge-core's loom build
//! checks the oneshot's frees and leaks; outputs carry a `loom::alloc::Track` and a drop
//! counter.

use crate::handoff::loom_handoff;
use crate::handoff::pool::{Pool as LoomPool, loom_fail_spawns};
use loom::alloc::Track;
use loom::thread;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Instant;

struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// Hands the job to a new loom thread standing in for a handoff worker, which runs it, or
/// drops it unrun when `run` is false. Not joined: a late unpark that reaches a thread
/// waiting in `join` trips an internal assertion of loom 0.7; loom runs every thread to its
/// end anyway, and the handoff itself returns only once the job is done.
fn worker(run: bool) -> impl FnOnce(bridge_core::scoped::Erased) {
    move |job| {
        thread::spawn(move || {
            if run {
                job.run(&|| ());
            } else {
                drop(job);
            }
        });
    }
}

/// The worker runs the job while the caller waits without a deadline: the output arrives
/// once.
///
/// Catches: an outcome published before the future's writes (loom's cell tracking on the
/// oneshot slot), a lost wake-up of the blocked caller (deadlock).
#[test]
fn job_completes_while_the_caller_waits() {
    loom::model(|| {
        let output = loom_handoff(async { Track::new(7u32) }, None, worker(true));
        assert_eq!(*output.expect("the output").get_ref(), 7);
    });
}

/// The caller's deadline races the job's completion: the caller asks the worker to stop
/// and waits for it, then gets the output (it came anyway) or a timeout (the future was
/// dropped unfinished). The future borrows from the caller's stack; the caller marks the
/// borrow dead right after the call, and the future checks it on each poll and in its drop.
/// The output is dropped exactly once either way.
///
/// Catches: a caller that returns at its deadline while the worker still polls the future
/// (the future sees the borrow dead); an output leaked or dropped twice.
#[test]
fn caller_timeout_vs_completion() {
    use loom::sync::atomic::AtomicBool;

    struct Borrows<'a>(&'a AtomicBool);
    impl Drop for Borrows<'_> {
        fn drop(&mut self) {
            assert!(self.0.load(SeqCst), "the future outlived the call");
        }
    }

    loom::model(|| {
        let alive = AtomicBool::new(true);
        let drops = Arc::new(AtomicUsize::new(0));
        let counter = drops.clone();
        let borrows = Borrows(&alive);
        let (gate_tx, gate_rx) = bridge_core::oneshot::channel::<()>();
        thread::spawn(move || drop(gate_tx.send(())));
        let future = async move {
            // The whole value moves in (a field use alone would capture only the field).
            let borrows = borrows;
            let _gate = gate_rx.await;
            assert!(borrows.0.load(SeqCst), "polled after the call");
            Track::new(Counted(counter))
        };
        match loom_handoff(future, Some(Instant::now()), worker(true)) {
            Ok(output) => drop(output),
            Err(err) if err.is_timeout() => {}
            Err(other) => panic!("unexpected {other:?}"),
        }
        alive.store(false, SeqCst);
        assert!(drops.load(SeqCst) <= 1);
    });
}

/// The future panics on the worker: the payload reaches the caller, the worker thread does
/// not unwind.
///
/// Catches: a job that lets the panic escape (the worker thread dies: loom reports its
/// panic, and the caller would see a lost error instead of the payload).
#[test]
fn worker_panic_reaches_the_caller() {
    loom::model(
        || match loom_handoff(async { std::panic::panic_any(3u8) }, None, worker(true)) {
            Err(err) if err.is_panic() => {
                assert_eq!(err.into_panic().downcast_ref::<u8>(), Some(&3));
            }
            other => panic!("expected the panic, got {:?}", other.map(|_| ())),
        },
    );
}

/// The pool drops the job unrun (no worker thread could be started), racing the caller's
/// wait: the caller learns that no worker could start (an unavailable error) instead of
/// waiting forever, and the future's captures are dropped (before the call returns).
///
/// Catches: a job whose drop does not close the channel (the caller blocks forever: loom
/// reports the deadlock); a future's captures leaked when the job is dropped.
#[test]
fn a_job_dropped_unrun_is_unavailable() {
    loom::model(|| {
        let captured = Track::new(());
        let future = async move {
            let _keep = captured;
        };
        let err = loom_handoff(future, None, worker(false))
            .map(drop)
            .expect_err("the job was dropped unrun");
        assert!(
            !err.is_panic() && !err.is_timeout() && !err.is_lost(),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .starts_with("the bridge could not start a thread or runtime"),
            "{err}"
        );
        assert!(std::error::Error::source(&err).is_some(), "{err:?}");
    });
}

/// A second job is submitted while the pool's only worker, idle after its first job, times
/// out and retires: the caller either takes the worker from the idle list (and the worker
/// must then take the job, not retire) or finds the list empty (and starts a new worker).
/// Either way the job runs exactly once, and every worker thread ends.
///
/// Catches: a worker that retires without checking whether a caller took it (the job is
/// handed to a thread that has left: lost, and its caller waits forever); a job run twice.
#[test]
fn submit_vs_worker_retire() {
    loom::model(|| {
        let pool = loom::sync::Arc::new(LoomPool::default());
        let runs = Arc::new(AtomicUsize::new(0));
        for round in 0..2 {
            let (done_tx, done_rx) = bridge_core::oneshot::channel();
            let counter = runs.clone();
            LoomPool::submit(
                &pool,
                Box::new(move |back_to_idle: &dyn Fn()| {
                    counter.fetch_add(1, SeqCst);
                    // As the handoff does: back in the idle list before the result goes out,
                    // so the next submit may pop this worker while its job is still running.
                    back_to_idle();
                    let _ = done_tx.send(round);
                }),
            );
            assert_eq!(done_rx.recv_blocking(), Ok(round), "job {round} was lost");
        }
        assert_eq!(runs.load(SeqCst), 2);
    });
}

/// The pool capped at 1 thread: a first job starts the worker, and two more are submitted
/// while it runs that job, goes idle and retires (the stand-in for its wait treats the idle
/// time as passed). Each later submit finds the worker busy (the job queues), idle (the job
/// goes to its mailbox), retiring (it takes the job after all) or gone (a new worker starts).
/// Every job runs exactly once, in submission order, never two at once, the pool never counts
/// more than 1 thread, and every worker thread ends (no job stranded in the queue).
///
/// Catches: a cap that is not enforced (a second thread counted while the first is alive);
/// a worker that retires or goes idle with a job queued (the job is never run: the caller
/// blocks forever, loom reports the deadlock); a queue taken newest first.
#[test]
fn cap_one_fifo_vs_retire() {
    loom::model(|| {
        let pool = loom::sync::Arc::new(LoomPool::new(1));
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let running = Arc::new(AtomicUsize::new(0));
        let waits: Vec<_> = (0..3)
            .map(|index| {
                let (done_tx, done_rx) = bridge_core::oneshot::channel();
                let (order, running) = (order.clone(), running.clone());
                let counted = pool.clone();
                LoomPool::submit(
                    &pool,
                    Box::new(move |back_to_idle: &dyn Fn()| {
                        assert_eq!(running.fetch_add(1, SeqCst), 0, "two jobs at once");
                        assert!(counted.stats().0 <= 1, "more threads than the cap");
                        order.lock().unwrap().push(index);
                        running.fetch_sub(1, SeqCst);
                        back_to_idle();
                        let _ = done_tx.send(index);
                    }),
                );
                assert!(pool.stats().0 <= 1, "more threads than the cap");
                done_rx
            })
            .collect();
        for (index, done) in waits.into_iter().enumerate() {
            assert_eq!(done.recv_blocking(), Ok(index), "job {index} was lost");
        }
        assert_eq!(*order.lock().unwrap(), [0, 1, 2]);
    });
}

/// The pool capped at 1 thread: its worker's job submits a second job and waits for it (a
/// handed-off future that hands off again). The nested submit comes from a worker, so it
/// starts a thread beyond the cap; the inner job runs and the outer one completes.
///
/// Catches: a nested submit that queues like any other (it waits for the only worker, which
/// waits for it: loom reports the deadlock).
#[test]
fn nested_submit_bypasses_the_cap() {
    loom::model(|| {
        let pool = loom::sync::Arc::new(LoomPool::new(1));
        let (done_tx, done_rx) = bridge_core::oneshot::channel();
        let inner_pool = pool.clone();
        LoomPool::submit(
            &pool,
            Box::new(move |back_to_idle: &dyn Fn()| {
                let (inner_tx, inner_rx) = bridge_core::oneshot::channel();
                LoomPool::submit(
                    &inner_pool,
                    Box::new(move |back_to_idle: &dyn Fn()| {
                        back_to_idle();
                        let _ = inner_tx.send(5u8);
                    }),
                );
                let inner = inner_rx.recv_blocking();
                back_to_idle();
                let _ = done_tx.send(inner);
            }),
        );
        assert_eq!(done_rx.recv_blocking(), Ok(Ok(5)));
    });
}

/// The pool at its cap of 1 thread, busy with a first job held by a gate, with a second job
/// queued; the cap is raised to 2 and a third job is submitted. The new worker starts with
/// the queue's oldest job (the second) and the third queues; the new worker takes it after
/// the second, while the first worker is still held. Then the gate opens: the first worker
/// finishes, goes idle or finds nothing queued, and retires, racing the second worker's
/// retirement. Every job runs exactly once, the second before the third, and every worker
/// thread ends.
///
/// Catches: a raised cap that starts the newest job first (the third runs before the
/// second); one that starts the newest and forgets the queued one, or that queues the new
/// job without starting a worker (a job never runs while the gate is held: its caller blocks
/// forever, loom reports the deadlock).
#[test]
fn raised_cap_starts_the_oldest() {
    loom::model(|| {
        let pool = loom::sync::Arc::new(LoomPool::new(1));
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (open, gate) = bridge_core::oneshot::channel::<()>();
        let (first_tx, first_rx) = bridge_core::oneshot::channel();
        LoomPool::submit(
            &pool,
            Box::new(move |_: &dyn Fn()| {
                let _ = gate.recv_blocking();
                let _ = first_tx.send(0);
            }),
        );
        let waits: Vec<_> = (1..3)
            .map(|index| {
                let (done_tx, done_rx) = bridge_core::oneshot::channel();
                let order = order.clone();
                LoomPool::submit(
                    &pool,
                    Box::new(move |_: &dyn Fn()| {
                        order.lock().unwrap().push(index);
                        let _ = done_tx.send(index);
                    }),
                );
                if index == 1 {
                    assert_eq!(pool.stats(), (1, 0, 1), "the second job queues");
                    assert_eq!(pool.set_max(2), 1);
                }
                done_rx
            })
            .collect();
        // Both run while the first worker is held.
        for (done, index) in waits.into_iter().zip(1..) {
            assert_eq!(done.recv_blocking(), Ok(index));
        }
        assert_eq!(*order.lock().unwrap(), [1, 2]);
        drop(open.send(()));
        assert_eq!(first_rx.recv_blocking(), Ok(0));
    });
}

/// The pool capped at 1 thread, empty. Two callers submit at once, and the first one's spawn
/// fails (injected: the OS refusing a thread). The second caller either comes first (it
/// starts the worker; the first then queues, so its job runs after all), or comes after the
/// failure (it starts the worker), or comes between the first one's decision to start a
/// worker and the failure: then it queues behind a worker that never comes, with no worker
/// alive, and its job is dropped too. A dropped job closes its caller's channel: no caller
/// waits forever, no job runs twice, every thread ends.
///
/// Catches: a spawn failure that strands the queued jobs when no worker is alive (their
/// caller blocks forever: loom reports the deadlock); one that forgets to give back its
/// thread count (the second caller's job queues for ever).
#[test]
fn spawn_failure_strands_no_job() {
    use bridge_core::oneshot::RecvError;
    loom::model(|| {
        let pool = loom::sync::Arc::new(LoomPool::new(1));
        let other = pool.clone();
        let second = thread::spawn(move || {
            let (done_tx, done_rx) = bridge_core::oneshot::channel();
            LoomPool::submit(
                &other,
                Box::new(move |_: &dyn Fn()| {
                    let _ = done_tx.send(2u8);
                }),
            );
            done_rx.recv_blocking()
        });
        loom_fail_spawns(1);
        let (done_tx, done_rx) = bridge_core::oneshot::channel();
        LoomPool::submit(
            &pool,
            Box::new(move |_: &dyn Fn()| {
                let _ = done_tx.send(1u8);
            }),
        );
        let first = done_rx.recv_blocking();
        let second = second.join().unwrap();
        assert!(matches!(first, Ok(1) | Err(RecvError)), "{first:?}");
        assert!(matches!(second, Ok(2) | Err(RecvError)), "{second:?}");
        // The failed spawn gave back its count: nothing is left queued or counted.
        assert_eq!(pool.stats().2, 0, "a job left in the queue");
    });
}

/// Checks, when dropped, that the caller has not returned yet: the caller marks `alive` dead
/// right after its call.
struct Borrows<'a>(&'a loom::sync::atomic::AtomicBool);

impl Drop for Borrows<'_> {
    fn drop(&mut self) {
        assert!(self.0.load(SeqCst), "the future outlived the call");
    }
}

/// The pool at its cap of 1 thread, held by a first job until a gate opens, with a second
/// job queued; a handoff through the pool with a deadline already passed queues behind it.
/// At the deadline the caller takes its own job back out of the queue
/// (`pool.cancel.removed_queued`), and drops it on its own thread, unpolled, outside the
/// pool's lock and while what the future borrows is alive, and returns a timeout. The
/// future's drop reads the pool's stats: the first job running, the second still queued. The
/// gate opens only after the call returned; the second job then runs.
///
/// Catches: a queued call that waits for a worker to take its job before it returns (the
/// only worker waits for the gate, which opens after the call: loom reports the deadlock);
/// a take-back of the queue's oldest job instead of its own (the caller's own job stays
/// queued behind the held worker, and the call waits for it: the deadlock again); a job
/// dropped under the pool's lock (the drop's stats call blocks on it: loom reports the
/// deadlock); a job dropped after the call returned (its borrow is dead).
#[test]
fn a_queued_call_leaves_the_queue_at_its_deadline() {
    use loom::sync::atomic::AtomicBool;

    /// Reads the pool's stats when dropped: the lock must be free, and only the second job
    /// left in the queue.
    struct StatsOnDrop(loom::sync::Arc<LoomPool>);
    impl Drop for StatsOnDrop {
        fn drop(&mut self) {
            assert_eq!(
                self.0.stats(),
                (1, 0, 1),
                "dropped before leaving the queue"
            );
        }
    }

    loom::model(|| {
        let pool = loom::sync::Arc::new(LoomPool::new(1));
        let (open, gate) = bridge_core::oneshot::channel::<()>();
        let (first_tx, first_rx) = bridge_core::oneshot::channel();
        LoomPool::submit(
            &pool,
            Box::new(move |_: &dyn Fn()| {
                let _ = gate.recv_blocking();
                let _ = first_tx.send(1u8);
            }),
        );
        let (second_tx, second_rx) = bridge_core::oneshot::channel();
        LoomPool::submit(
            &pool,
            Box::new(move |_: &dyn Fn()| {
                let _ = second_tx.send(2u8);
            }),
        );
        let alive = AtomicBool::new(true);
        let polled = AtomicBool::new(false);
        let borrows = Borrows(&alive);
        let probe = StatsOnDrop(pool.clone());
        let future = async {
            let _probe = probe;
            let _borrows = borrows;
            polled.store(true, SeqCst);
        };
        match LoomPool::loom_handoff(&pool, future, Some(Instant::now())) {
            Err(err) if err.is_timeout() => {}
            other => panic!("expected a timeout, got {other:?}"),
        }
        alive.store(false, SeqCst);
        assert!(!polled.load(SeqCst), "the queued future was polled");
        assert_eq!(
            pool.stats(),
            (1, 0, 1),
            "only the second job is left queued"
        );
        drop(open.send(()));
        assert_eq!(first_rx.recv_blocking(), Ok(1));
        assert_eq!(second_rx.recv_blocking(), Ok(2), "the second job was lost");
    });
}

/// The pool at its cap of 1 thread, busy with a first job that a racing thread's gate
/// releases; a handoff through the pool with a deadline already passed. The worker may free
/// up before the submit (the job goes to it, or to a new worker if it retired), or take the
/// job from the queue before the caller's deadline, or after it. A caller that finds its job
/// gone from the queue (`pool.cancel.already_started`) asks it to stop and waits, as for any
/// started job; one that finds it queued takes it back (`pool.cancel.removed_queued`). The
/// future borrows from the caller's stack and checks the borrow on each poll and in its
/// drop; its output is dropped at most once; nothing is left queued.
///
/// Catches: a take-back that assumes its job is still queued (it fails when a worker took
/// the job first, and only this race takes that path); an output leaked or dropped twice; a
/// future polled or dropped after the call returned.
#[test]
fn a_deadline_vs_a_worker_taking_the_queued_job() {
    use loom::sync::atomic::AtomicBool;

    loom::model(|| {
        let pool = loom::sync::Arc::new(LoomPool::new(1));
        let (open, gate) = bridge_core::oneshot::channel::<()>();
        let (first_tx, first_rx) = bridge_core::oneshot::channel();
        LoomPool::submit(
            &pool,
            Box::new(move |back_to_idle: &dyn Fn()| {
                let _ = gate.recv_blocking();
                back_to_idle();
                let _ = first_tx.send(1u8);
            }),
        );
        thread::spawn(move || drop(open.send(())));
        let alive = AtomicBool::new(true);
        let drops = Arc::new(AtomicUsize::new(0));
        let counter = drops.clone();
        let borrows = Borrows(&alive);
        let future = async move {
            let borrows = borrows;
            assert!(borrows.0.load(SeqCst), "polled after the call");
            Track::new(Counted(counter))
        };
        match LoomPool::loom_handoff(&pool, future, Some(Instant::now())) {
            Ok(output) => drop(output),
            Err(err) if err.is_timeout() => {}
            Err(other) => panic!("unexpected {other:?}"),
        }
        alive.store(false, SeqCst);
        assert!(drops.load(SeqCst) <= 1);
        assert_eq!(pool.stats().2, 0, "a job was left in the queue");
        assert_eq!(first_rx.recv_blocking(), Ok(1), "the first job was lost");
    });
}

/// A handoff through the pool (capped at 1 thread, empty) whose worker cannot start
/// (injected spawn failure), with a future whose drop panics. The job is dropped unrun in the
/// failed spawn: the call unwinds with the drop's panic (its channel closed all the same)
/// instead of waiting forever, the pool gives back the thread it had counted, and the next
/// handoff runs.
///
/// Catches: a job whose sender leaks while the future's drop unwinds (the call waits
/// forever: loom reports the deadlock); a spawn failure whose unwinding job skips giving
/// back its count (a slot of the cap lost: the next call queues for a worker that never
/// comes, and loom reports the deadlock).
#[test]
fn a_failed_spawn_whose_future_panics_in_drop_keeps_the_pool_whole() {
    use std::panic::{self, AssertUnwindSafe};

    /// Panics when dropped.
    struct PanicsOnDrop;
    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            panic::panic_any("in the future's drop");
        }
    }

    loom::model(|| {
        let pool = loom::sync::Arc::new(LoomPool::new(1));
        let bomb = PanicsOnDrop;
        let future = async move {
            let _bomb = bomb;
        };
        loom_fail_spawns(1);
        let unwound = panic::catch_unwind(AssertUnwindSafe(|| {
            LoomPool::loom_handoff(&pool, future, None)
        }));
        let payload = unwound.map(drop).expect_err("the future's drop panics");
        assert_eq!(
            payload.downcast_ref::<&str>(),
            Some(&"in the future's drop")
        );
        assert_eq!(pool.stats(), (0, 0, 0), "the failed spawn kept its count");
        let next = LoomPool::loom_handoff(&pool, async { 5u8 }, None);
        assert_eq!(next.ok(), Some(5));
    });
}
