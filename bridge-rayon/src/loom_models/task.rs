//! loom models of the task protocol, with loom threads standing in for the pool.
//!
//! ```sh
//! RUSTFLAGS="--cfg bridge_loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p threadbridge-rayon --release --lib loom_models
//! ```
//!
//! The task and its job share the job's cell (`job_claim.rs`): the closure, the outcome and
//! the task's waker in loom's `UnsafeCell`s (so every access is checked), ordered by one
//! atomic byte that also holds the task's interest, which the closure reads. The pool's copy and the task's waiter (on the worker that spawned it: `loom_claimable_task`)
//! race to move the stage away from `QUEUED`, and only the winner runs the job; the outcome's
//! hand-over races the task's polls, waker replacements, drop and detach. Values carry a
//! `loom::alloc::Track` (leak check) and a drop counter (double drop check).
use crate::spawn::{loom_claimable_task, loom_task};
use loom::alloc::Track;
use loom::thread;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

/// Counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// A cancel that happened-before the job starts keeps the closure from running; a cancel
/// racing the start lets it run at most once. The closure's captures are dropped exactly once
/// either way.
///
/// Catches: a job that ignores the cancel (the second part runs the closure); a cancelled job
/// that leaks its closure (Track leak).
#[test]
fn cancel_vs_start() {
    loom::model(|| {
        let runs = Arc::new(AtomicUsize::new(0));
        let captures = Arc::new(AtomicUsize::new(0));
        let capture = Track::new(Counted(captures.clone()));
        let counter = runs.clone();
        let (task, job) = loom_task(move |_| {
            let _keep = &capture;
            counter.fetch_add(1, SeqCst);
        });
        let pool = thread::spawn(job);
        drop(task);
        pool.join().unwrap();
        assert!(runs.load(SeqCst) <= 1);
        assert_eq!(captures.load(SeqCst), 1);

        // Cancel first, start after: never runs.
        let counter = runs.clone();
        let before = runs.load(SeqCst);
        let (task, job) = loom_task(move |_| {
            counter.fetch_add(1, SeqCst);
        });
        drop(task);
        thread::spawn(job).join().unwrap();
        assert_eq!(
            runs.load(SeqCst),
            before,
            "ran after a cancel that happened-before"
        );
    });
}

/// The task is dropped while the job completes: the result is dropped exactly once, by
/// whichever side holds it last (the receiver, or the pool thread when the send fails).
///
/// Catches: a result leaked when nobody waits (Track leak), or dropped twice.
#[test]
fn completion_vs_drop() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let made = Arc::new(AtomicUsize::new(0));
        let (counter, made_counter) = (drops.clone(), made.clone());
        let (task, job) = loom_task(move |_| {
            made_counter.fetch_add(1, SeqCst);
            Track::new(Counted(counter))
        });
        let pool = thread::spawn(job);
        drop(task);
        pool.join().unwrap();
        assert_eq!(drops.load(SeqCst), made.load(SeqCst));
    });
}

/// A panic in the closure against a waiting task: the payload reaches the task, as an error
/// from `join` or a resumed panic from `wait`.
///
/// Catches: a panic that escapes the job (loom reports the thread's panic); a payload lost
/// on the way (the join would report Lost or hang).
#[test]
fn panic_vs_wait() {
    loom::model(|| {
        let (task, job) = loom_task(|_| -> u8 { std::panic::panic_any(5u32) });
        let pool = thread::spawn(job);
        match task.join() {
            Err(err) if err.is_panic() => {
                assert_eq!(err.into_panic().downcast_ref::<u32>(), Some(&5));
            }
            other => panic!("expected the panic, got {other:?}"),
        }
        // Not joined: see `job_dropped_unrun_vs_wait`.
        drop(pool);
    });
}

/// The value against an async receive through the runtime-free `block_on`.
///
/// Catches: a result published before the closure's writes (loom's cell tracking on the
/// oneshot slot reports the race).
#[test]
fn value_vs_await() {
    loom::model(|| {
        let (task, job) = loom_task(|_| Track::new(41u32));
        let pool = thread::spawn(job);
        let value = bridge_core::block_on(task);
        assert_eq!(*value.get_ref(), 41);
        pool.join().unwrap();
    });
}

/// A detached task runs and never sees a cancel; a cooperative closure that runs until it
/// sees the cancel ends once its task is dropped.
///
/// Catches: detach implemented as a cancel (the job may not run, or its flag turns on); a
/// drop that does not reach the flag (the closure spins forever: loom's branch limit).
#[test]
fn flag_vs_drop_and_detach() {
    loom::model(|| {
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = seen.clone();
        let (task, job) = loom_task(move |flag| {
            counter.store(usize::from(flag.is_cancelled()) + 1, SeqCst);
        });
        let pool = thread::spawn(job);
        task.detach();
        pool.join().unwrap();
        assert_eq!(
            seen.load(SeqCst),
            1,
            "a detached task must run, and never see a cancel"
        );

        // A closure that runs until it sees the cancel: it ends only if the drop reaches it.
        let (task, job) = loom_task(|flag| {
            while !flag.is_cancelled() {
                thread::yield_now();
            }
        });
        let pool = thread::spawn(job);
        drop(task);
        pool.join().unwrap();
    });
}

/// A job that its pool drops without running (rayon never does; a pool of another kind
/// might) against a blocking wait: the wait ends with `Lost`, which is not a panic, instead
/// of hanging.
///
/// Catches: a dropped sender that does not wake the waiter (loom reports the deadlock); a
/// `Lost` reported as a panic. The drop runs against every step of the wait (spin, register,
/// park): 14 executions at bound 3.
#[test]
fn job_dropped_unrun_vs_wait() {
    loom::model(|| {
        let (task, job) = loom_task(|_| 1u8);
        let pool = thread::spawn(move || drop(job));
        let err = task.join().unwrap_err();
        assert!(err.is_lost(), "expected Lost, got {err:?}");
        assert!(!err.is_panic());
        // The pool thread is not joined. The job wakes its waiter after setting DONE,
        // so a wait that re-polls and sees the outcome (the wait is split at the stall
        // threshold) returns before the wake-up, which may then land while this thread is
        // blocked in `join`: loom takes any unpark there for the join's notification (std's
        // join ignores unparks). `loom::model` still runs the thread to its end and fails on
        // its panic.
        drop(pool);
    });
}

/// The waiter's claim (`join` on the spawning worker) against the pool's start: every order
/// of the two compare-exchanges on the claim state, and the waiter's blocking receive when
/// the pool wins (spin, register, park against the send). Exactly one side runs the closure,
/// once; the value reaches the waiter once; the captures and the value are dropped once.
/// 13 executions at bound 3.
///
/// Catches: `claim-twice` (a claim that loads the state and then stores it lets both sides
/// win: the loser finds the job gone and panics); a claim that forgets the state (the
/// closure would run twice: the `runs` count).
#[test]
fn claim_vs_start() {
    loom::model(|| {
        let runs = Arc::new(AtomicUsize::new(0));
        let drops = Arc::new(AtomicUsize::new(0));
        let capture = Track::new(Counted(drops.clone()));
        let (counter, value_drops) = (runs.clone(), drops.clone());
        let (task, job) = loom_claimable_task(move |_| {
            let _keep = &capture;
            counter.fetch_add(1, SeqCst);
            Track::new(Counted(value_drops))
        });
        let pool = thread::spawn(job);
        let value = task.join().expect("the value");
        drop(value);
        pool.join().unwrap();
        assert_eq!(
            runs.load(SeqCst),
            1,
            "the closure ran {} times",
            runs.load(SeqCst)
        );
        assert_eq!(
            drops.load(SeqCst),
            2,
            "captures and value not dropped once each"
        );
    });
}

/// The same race through a poll (`bridge_core::block_on`) and with a closure that panics:
/// the payload reaches the waiter once, whichever side ran the closure, and never escapes
/// the pool thread.
///
/// Catches: a claimed job run outside `catch_unwind` (the poll unwinds with the payload
/// instead of returning it); `claim-twice`, as above. 35 executions at bound 3.
#[test]
fn claim_by_poll_vs_start_with_a_panic() {
    loom::model(|| {
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = runs.clone();
        let (task, job) = loom_claimable_task(move |_| -> u8 {
            counter.fetch_add(1, SeqCst);
            std::panic::panic_any(Track::new(5u32))
        });
        let pool = thread::spawn(job);
        match bridge_core::block_on(task.catch_unwind()) {
            Err(err) if err.is_panic() => {
                assert_eq!(
                    err.into_panic()
                        .downcast_ref::<Track<u32>>()
                        .map(Track::get_ref),
                    Some(&5)
                );
            }
            other => panic!("expected the panic, got {other:?}"),
        }
        pool.join().unwrap();
        assert_eq!(runs.load(SeqCst), 1);
    });
}

/// The waiter's claim against a pool that drops its copy of the job unrun (rayon never
/// does; another pool might): either the waiter claims first and gets the value, or the
/// pool's drop takes the job and the waiter gets `Lost`. The closure runs at most once,
/// only on the waiter, and its captures are dropped once either way.
///
/// Catches: a pool copy that drops the job's parts without taking the claim (the waiter
/// claims a job already gone, or waits forever for a sender still alive: loom's deadlock
/// report); a claim after the pool's drop that runs anyway. 10 executions at bound 3.
#[test]
fn claim_vs_job_dropped_unrun() {
    loom::model(|| {
        let runs = Arc::new(AtomicUsize::new(0));
        let drops = Arc::new(AtomicUsize::new(0));
        let capture = Track::new(Counted(drops.clone()));
        let counter = runs.clone();
        let (task, job) = loom_claimable_task(move |_| {
            let _keep = &capture;
            counter.fetch_add(1, SeqCst);
            1u8
        });
        let pool = thread::spawn(move || drop(job));
        match task.join() {
            Ok(value) => {
                assert_eq!(value, 1);
                assert_eq!(runs.load(SeqCst), 1);
            }
            Err(err) if err.is_lost() => assert_eq!(runs.load(SeqCst), 0),
            Err(other) => panic!("unexpected {other:?}"),
        }
        pool.join().unwrap();
        assert_eq!(drops.load(SeqCst), 1, "captures not dropped once");
    });
}

/// A claimable task (spawned on the worker that waits) waited for with a limit that has
/// passed while the pool starts its job, then dropped. The timed wait claims the job as
/// `wait` does (its one poll races the pool's copy) or finds the pool's and gives up: the
/// closure runs at most once, on the waiter only if the wait got its value. A cancel that
/// happened-before the start keeps the closure from running.
///
/// Catches: `claim-twice` style bugs (a claim that lets both sides run: the `runs` count); a
/// timed wait that runs the job and loses its value (`on_waiter` without `got`); a cancel
/// that the claim state hides from the pool (the second part runs the closure).
#[test]
fn timed_wait_then_cancel_vs_start() {
    loom::model(|| {
        let on_waiter = Arc::new(AtomicUsize::new(0));
        let runs = Arc::new(AtomicUsize::new(0));
        let (waiter_count, counter) = (on_waiter.clone(), runs.clone());
        let waiter = thread::current().id();
        let (mut task, job) = loom_claimable_task(move |_| {
            if thread::current().id() == waiter {
                waiter_count.fetch_add(1, SeqCst);
            }
            counter.fetch_add(1, SeqCst);
        });
        let pool = thread::spawn(job);
        let got = task.wait_timeout(std::time::Duration::ZERO);
        drop(task);
        pool.join().unwrap();
        assert!(runs.load(SeqCst) <= 1, "the closure ran twice");
        assert!(
            on_waiter.load(SeqCst) == 0 || got.is_some(),
            "the timed wait ran the job inline and gave no value"
        );
        assert!(got.is_none() || runs.load(SeqCst) == 1);

        // Cancel first, start after: never runs.
        let counter = runs.clone();
        let before = runs.load(SeqCst);
        let (task, job) = loom_claimable_task(move |_| {
            counter.fetch_add(1, SeqCst);
        });
        drop(task);
        thread::spawn(job).join().unwrap();
        assert_eq!(
            runs.load(SeqCst),
            before,
            "ran after a cancel that happened-before"
        );
    });
}

/// A second poll after the value was taken (by the waiter's own claim, or from the pool)
/// against the pool's copy starting: the terminated task runs nothing and reports no value,
/// whichever side won the race; the closure runs once.
#[test]
fn repoll_after_the_claim_vs_start() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    loom::model(|| {
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = runs.clone();
        let (mut task, job) = loom_claimable_task(move |_| counter.fetch_add(1, SeqCst));
        let pool = thread::spawn(job);
        assert_eq!(bridge_core::block_on(&mut task), 0);
        let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut cx = Context::from_waker(Waker::noop());
            std::pin::Pin::new(&mut task).poll(&mut cx)
        }));
        // Polled after its value: a panic, as any future may, never a second run.
        assert!(!matches!(again, Ok(Poll::Ready(_))));
        pool.join().unwrap();
        assert_eq!(runs.load(SeqCst), 1);
    });
}

/// Counts its wake-ups; each `Arc` is a waker of its own (`will_wake` tells them apart).
#[derive(Default)]
struct Wakes(AtomicUsize);

impl std::task::Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// A task polled with one waker, again with the same one, and then with another (a task
/// moved between executors' tasks) against the pool's hand-over: the hand-over wakes the
/// waker the task's side stored last (or the task finds the value in a poll), and the value
/// arrives once. Covers a poll that keeps its stored waker, one that replaces it, and the
/// hand-over before, between and after them.
///
/// Catches: a poll that keeps the first waker when given another (the second is never woken
/// and the last poll is pending).
#[test]
fn new_waker_vs_hand_over() {
    use std::task::{Context, Poll, Waker};
    loom::model(|| {
        let (mut task, job) = loom_task(|_| Track::new(7u8));
        let pool = thread::spawn(job);
        let (first, second) = (Arc::new(Wakes::default()), Arc::new(Wakes::default()));
        let mut poll = |wakes: &Arc<Wakes>| {
            let waker = Waker::from(wakes.clone());
            Pin::new(&mut task).poll(&mut Context::from_waker(&waker))
        };
        let mut value = None;
        for wakes in [&first, &first, &second] {
            if let Poll::Ready(ready) = poll(wakes) {
                value = Some(ready);
                break;
            }
        }
        let value = value.unwrap_or_else(|| {
            pool.join().unwrap();
            // The hand-over is over: it woke the waker stored last, the second.
            assert!(second.0.load(SeqCst) >= 1, "the stored waker was not woken");
            match poll(&second) {
                Poll::Ready(value) => value,
                Poll::Pending => panic!("woken, finished, and still pending"),
            }
        });
        assert_eq!(*value.get_ref(), 7);
    });
}

/// A task polled once (its waker stored) and then dropped or detached, against the pool's
/// hand-over: the value is dropped exactly once, by whichever side comes second (the task
/// once the outcome is there, the job when the task let go first).
///
/// Catches: an outcome that neither side drops (Track leak); an outcome dropped by both sides
/// (the drop count); a detached job that does not run.
#[test]
fn stored_waker_then_let_go_vs_hand_over() {
    use std::task::{Context, Waker};
    for detach in [false, true] {
        loom::model(move || {
            let drops = Arc::new(AtomicUsize::new(0));
            let made = Arc::new(AtomicUsize::new(0));
            let (counter, made_counter) = (drops.clone(), made.clone());
            let (mut task, job) = loom_task(move |_| {
                made_counter.fetch_add(1, SeqCst);
                Track::new(Counted(counter))
            });
            let pool = thread::spawn(job);
            let waker = Waker::from(Arc::new(Wakes::default()));
            let polled = Pin::new(&mut task).poll(&mut Context::from_waker(&waker));
            drop(polled);
            if detach {
                task.detach();
            } else {
                drop(task);
            }
            pool.join().unwrap();
            assert_eq!(drops.load(SeqCst), made.load(SeqCst));
            if detach {
                assert_eq!(
                    made.load(SeqCst),
                    1,
                    "a detached task's closure did not run"
                );
            }
        });
    }
}

// ---- Limit: the queue of waiters for room, and the permits that tasks carry ----

use crate::Limit;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// Polls once with a waker that does nothing.
fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    Pin::new(future).poll(&mut Context::from_waker(Waker::noop()))
}

/// A limit of 1, held by a permit, with two waiters queued behind it (the second polled
/// twice: still waiting). One thread gives the permit back while the main thread drops the
/// first waiter: every order of the release (which grants the first waiter) against the
/// drop (which leaves the queue, or, once granted, hands the permit on). The second waiter
/// then gets the room in every interleaving, and all the room comes back.
///
/// Catches: a granted waiter dropped without handing its permit on (the second waiter
/// waits forever: loom's deadlock report; `limit.drop.granted`); a release that frees the
/// room with waiters queued (a newcomer's `try` takes it: the assertion); a queued waiter
/// dropped without leaving the queue (the permit goes to a dead waiter: deadlock).
#[test]
fn limit_grant_vs_waiter_drop() {
    loom::model(|| {
        let limit = Limit::new(1);
        let permit = limit.try_acquire().expect("room");
        assert!(limit.try_acquire().is_none());
        let mut first = limit.acquire();
        let mut second = limit.acquire();
        assert!(poll_once(&mut first).is_pending());
        assert!(poll_once(&mut second).is_pending());
        assert!(poll_once(&mut second).is_pending());
        let releaser = thread::spawn(move || drop(permit));
        drop(first);
        // Nobody passes the queue, whatever the order above.
        assert!(limit.try_acquire().is_none());
        let permit = bridge_core::block_on(second);
        releaser.join().unwrap();
        assert_eq!(limit.in_flight(), 1);
        drop(permit);
        assert_eq!(limit.in_flight(), 0);
    });
}

/// A task spawned through a limit of 1 with room free (its closure goes to the pool at once,
/// the permit in it) and dropped while its job starts on the pool, with a waiter queued for
/// the room: a cancel that happened-before the start drops the closure (and its permit)
/// unrun; a racing one lets it run at most once. Either way the permit comes back exactly
/// once, in the closure's end or in its drop, and the waiter gets it.
///
/// Catches: `limit-loses-permit-on-cancel` (a cancelled job that forgets its permit: the
/// waiter waits forever, loom's deadlock report); a permit given back twice (the count
/// underflows: the final `in_flight` check, or an overflow panic).
#[test]
fn limit_cancel_before_start_gives_the_room_back() {
    loom::model(|| {
        let limit = Limit::new(1);
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = runs.clone();
        let (task, jobs) = limit.loom_spawn(move || {
            counter.fetch_add(1, SeqCst);
        });
        let mut waiter = limit.acquire();
        assert!(poll_once(&mut waiter).is_pending());
        let pool = thread::spawn(move || jobs.run_all());
        drop(task);
        let permit = bridge_core::block_on(waiter);
        pool.join().unwrap();
        assert!(runs.load(SeqCst) <= 1);
        drop(permit);
        assert_eq!(limit.in_flight(), 0);
    });
}

/// Two waiters, queued in that order on a limit of 1 held by a permit, each blocking on its
/// own thread and giving its room back at once; a third thread gives the first permit
/// back. Every interleaving of the three: the room goes to the older waiter first.
///
/// Catches: a queue served newest first (the order recorded is 2, 1); a grant that wakes
/// nobody (a blocked waiter never returns: deadlock).
#[test]
fn limit_two_waiters_fifo() {
    loom::model(|| {
        let limit = Limit::new(1);
        let permit = limit.try_acquire().expect("room");
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let waiters: Vec<_> = (1..=2)
            .map(|n| {
                let mut waiter = limit.acquire();
                assert!(poll_once(&mut waiter).is_pending());
                let order = order.clone();
                thread::spawn(move || {
                    let permit = bridge_core::block_on(waiter);
                    order.lock().unwrap().push(n);
                    drop(permit);
                })
            })
            .collect();
        thread::spawn(move || drop(permit)).join().unwrap();
        for waiter in waiters {
            waiter.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), [1, 2]);
        assert_eq!(limit.in_flight(), 0);
    });
}

/// A limit of 1, held by a permit, with an async waiter queued from this thread; another
/// thread gives the permit back while this thread blocks for room (as `spawn_or_wait`
/// does), and this blocked thread is the only one that polls the async waiter. In every
/// order the blocking wait gets the room: given back before the wait queued, the room
/// granted to the async waiter is taken over (`limit.acquire.takes_over`); given back
/// after, it passes the async waiter (`limit.release.passes_blocked`). The async waiter,
/// still in its place, then gets the next room.
///
/// Catches: strict FIFO between the two (the room goes to the async waiter, which nobody
/// polls while this thread blocks: loom's deadlock report); a take-over that does not put
/// the waiter back (its poll finds it neither queued nor granted: the expect); a thread
/// still listed as blocked after its wait got room (the next release finds no waiter that
/// can take it: the expect).
#[test]
fn limit_blocking_wait_vs_release_passes_its_own_thread() {
    loom::model(|| {
        let limit = Limit::new(1);
        let permit = limit.try_acquire().expect("room");
        let mut waiter = limit.acquire();
        assert!(poll_once(&mut waiter).is_pending());
        let releaser = thread::spawn(move || drop(permit));
        let blocking = bridge_core::block_on(limit.acquire_blocking());
        assert!(poll_once(&mut waiter).is_pending());
        assert!(limit.try_acquire().is_none());
        drop(blocking);
        let Poll::Ready(permit) = poll_once(&mut waiter) else {
            panic!("the passed waiter did not get the next room");
        };
        releaser.join().unwrap();
        assert_eq!(limit.in_flight(), 1);
        drop(permit);
        assert_eq!(limit.in_flight(), 0);
    });
}

/// A task spawned through a full limit of 1 waits in line as a future task (queued in the
/// call, polled on the pool); one thread gives the held permit back while another runs the
/// task's polls, and the main thread drops the task: every order of the grant (which may
/// come before the task's first poll, and then wakes nobody), the polls, and the cancel
/// (which drops the future on the pool: its waiter leaves the line, or hands the room on).
/// The closure runs at most once, and all the room comes back.
///
/// Catches: a cancelled waiting task that keeps its place or its grant (the room is lost:
/// the final checks); a permit given back twice (the count underflows).
#[test]
fn limit_waiting_task_dropped_vs_grant() {
    loom::model(|| {
        let limit = Limit::new(1);
        let permit = limit.try_acquire().expect("room");
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = runs.clone();
        let (task, jobs) = limit.loom_spawn(move || {
            counter.fetch_add(1, SeqCst);
        });
        assert!(limit.try_acquire().is_none(), "a newcomer passed the task");
        let pool = {
            let jobs = jobs.clone();
            thread::spawn(move || jobs.run_all())
        };
        let releaser = thread::spawn(move || drop(permit));
        drop(task);
        releaser.join().unwrap();
        pool.join().unwrap();
        // The polls queued after the pool thread found its queue empty.
        jobs.run_all();
        assert!(runs.load(SeqCst) <= 1);
        assert_eq!(limit.in_flight(), 0);
        assert!(limit.try_acquire().is_some(), "the room was lost");
    });
}

/// A task spawned through a full limit of 1 waits in line; one thread gives the held permit
/// back while another runs the task's polls: the grant may come before the task's first
/// poll (the waiter has no waker yet: the poll already queued finds the grant), or after
/// it (its wake queues the next poll). Either way the task runs its closure, once, holding
/// the room, and the room comes back.
///
/// Catches: a grant to a waiter never polled that nobody takes (the task never finishes:
/// the `wait` below, loom's deadlock report); a waiting task that runs before the room is
/// its (the bound check in the closure).
#[test]
fn limit_waiting_task_gets_the_room_given_back() {
    loom::model(|| {
        let limit = Limit::new(1);
        let permit = limit.try_acquire().expect("room");
        let inside = limit.clone();
        let (task, jobs) = limit.loom_spawn(move || {
            assert!(inside.try_acquire().is_none(), "ran beside the held room");
            7
        });
        let pool = {
            let jobs = jobs.clone();
            thread::spawn(move || jobs.run_all())
        };
        let releaser = thread::spawn(move || drop(permit));
        releaser.join().unwrap();
        pool.join().unwrap();
        jobs.run_all();
        assert_eq!(task.wait(), 7);
        assert_eq!(limit.in_flight(), 0);
        // With room free, a wait for it (`spawn_or_wait`'s) takes it at its first poll.
        drop(bridge_core::block_on(limit.acquire_blocking()));
        assert_eq!(limit.in_flight(), 0);
    });
}
