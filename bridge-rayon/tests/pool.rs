//! bridge-rayon on real rayon pools: results, panics, cancellation, nesting, executors.

mod common;

use bridge_rayon::{Error, ThreadPoolExt};
use common::{gate, pool};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Waits until every job queued on a one-thread pool so far has finished.
fn drain(pool: &rayon::ThreadPool) {
    pool.spawn_fifo_task(|| ()).wait();
}

#[test]
fn the_value_comes_back_on_every_executor() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    assert_eq!(rt.block_on(bridge_rayon::spawn(|| 1)), 1);
    let current = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert_eq!(current.block_on(bridge_rayon::spawn(|| 2)), 2);
    assert_eq!(futures::executor::block_on(bridge_rayon::spawn(|| 3)), 3);
    assert_eq!(bridge_core::block_on(bridge_rayon::spawn(|| 4)), 4);
    let ex = async_executor::Executor::new();
    let task = ex.spawn(bridge_rayon::spawn(|| 5));
    assert_eq!(futures::executor::block_on(ex.run(task)), 5);
}

#[test]
fn a_panic_is_resumed_in_the_awaiting_task() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let joined = rt.block_on(async {
        tokio::spawn(async { bridge_rayon::spawn(|| -> u8 { panic!("decode failed") }).await })
            .await
    });
    let payload = joined.unwrap_err().into_panic();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"decode failed"));
    // The runtime and the pool keep working.
    assert_eq!(rt.block_on(bridge_rayon::spawn(|| 9)), 9);
}

#[test]
fn the_non_panicking_forms_carry_the_payload() {
    let err = futures::executor::block_on(
        bridge_rayon::spawn(|| -> u8 { std::panic::panic_any(17u32) }).catch_unwind(),
    )
    .unwrap_err();
    assert_eq!(
        err.try_into_panic().unwrap().downcast_ref::<u32>(),
        Some(&17)
    );
    let err = bridge_rayon::spawn(|| -> u8 { panic!("{}", String::from("owned")) })
        .join()
        .unwrap_err();
    assert_eq!(err.to_string(), "the work panicked: owned");
    assert_eq!(format!("{err:?}"), "Panicked(\"owned\")");
    // The error is Send + Sync + 'static: it boxes into the usual error types and crosses
    // threads, payload included. (A lost job's message is checked by the crate's unit tests:
    // only the crate can make one.)
    let boxed: Box<dyn std::error::Error + Send + Sync> = err.into();
    assert_eq!(boxed.to_string(), "the work panicked: owned");
    let err = bridge_rayon::spawn(|| -> u8 { std::panic::panic_any(23u32) })
        .join()
        .unwrap_err();
    let shared = std::sync::Arc::new(err);
    let seen = std::thread::spawn({
        let shared = std::sync::Arc::clone(&shared);
        move || shared.is_panic() && !shared.is_lost()
    });
    assert!(seen.join().unwrap());
    let err = std::sync::Arc::into_inner(shared).unwrap();
    let err: anyhow::Error = err.into();
    let payload = err.downcast::<Error>().unwrap().into_panic();
    assert_eq!(payload.downcast_ref::<u32>(), Some(&23));
}

#[test]
fn a_task_dropped_before_its_job_starts_never_runs() {
    let pool = pool(1);
    let open = gate(&pool);
    let ran = Arc::new(AtomicUsize::new(0));
    let captures_dropped = Arc::new(AtomicUsize::new(0));
    struct Capture(Arc<AtomicUsize>);
    impl Drop for Capture {
        fn drop(&mut self) {
            self.0.fetch_add(1, SeqCst);
        }
    }
    for _ in 0..10_000 {
        let ran = Arc::clone(&ran);
        let capture = Capture(Arc::clone(&captures_dropped));
        drop(pool.spawn_task(move || {
            let _keep = &capture;
            ran.fetch_add(1, SeqCst);
        }));
    }
    drop(open);
    drain(&pool);
    assert_eq!(ran.load(SeqCst), 0, "a cancelled job ran");
    assert_eq!(captures_dropped.load(SeqCst), 10_000, "captures leaked");
}

#[test]
fn a_running_closure_sees_the_cancel_and_its_result_is_dropped_on_the_pool() {
    let pool = pool(1);
    let (started_tx, started) = mpsc::channel();
    let dropped_on = Arc::new(std::sync::Mutex::new(None));
    struct Result(Arc<std::sync::Mutex<Option<Option<usize>>>>);
    impl Drop for Result {
        fn drop(&mut self) {
            *self.0.lock().unwrap() = Some(rayon::current_thread_index());
        }
    }
    let slot = Arc::clone(&dropped_on);
    let task = pool.spawn_cancellable_task(move |flag| {
        started_tx.send(()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !flag.is_cancelled() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(100));
        }
        assert!(flag.is_cancelled(), "the cancel never reached the closure");
        Result(slot)
    });
    started.recv().unwrap();
    drop(task);
    drain(&pool);
    assert_eq!(*dropped_on.lock().unwrap(), Some(Some(0)));
}

#[test]
fn the_flag_is_read_inside_par_iter_and_sees_the_cancel() {
    use rayon::prelude::*;

    let pool = pool(2);
    let (started_tx, started) = mpsc::channel();
    let (seen_tx, seen) = mpsc::channel();
    let task = pool.spawn_cancellable_task(move |flag| {
        started_tx.send(()).unwrap();
        // Every item of the parallel loop, on either worker, waits for the cancel.
        let deadline = Instant::now() + Duration::from_secs(30);
        let saw_cancel = (0..8u32)
            .into_par_iter()
            .map(|_| {
                while !flag.is_cancelled() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_micros(100));
                }
                flag.is_cancelled()
            })
            .filter(|&cancelled| cancelled)
            .count();
        seen_tx.send(saw_cancel).unwrap();
    });
    started.recv().unwrap();
    drop(task);
    assert_eq!(seen.recv_timeout(Duration::from_secs(60)), Ok(8));
}

#[test]
fn a_detached_task_runs_with_its_flag_clear() {
    let (tx, rx) = mpsc::channel();
    bridge_rayon::spawn_cancellable(move |flag| {
        std::thread::sleep(Duration::from_millis(2));
        tx.send(flag.is_cancelled()).unwrap();
    })
    .detach();
    assert_eq!(rx.recv_timeout(Duration::from_secs(30)), Ok(false));
}

#[test]
fn wait_timeout_gives_none_then_the_value() {
    let pool = pool(1);
    let open = gate(&pool);
    let mut task = pool.spawn_task(|| 5);
    assert_eq!(task.wait_timeout(Duration::from_millis(5)), None);
    assert_eq!(task.try_get(), None);
    drop(open);
    assert_eq!(task.wait_timeout(Duration::from_secs(30)), Some(5));
}

#[test]
fn spawning_and_waiting_inside_a_one_thread_pool_does_not_deadlock() {
    let pool = pool(1);
    // The pool's only thread waits for a task it spawned: it claims the job and runs it.
    let nested = pool.spawn_task(|| bridge_rayon::spawn(|| 21).wait() * 2);
    assert_eq!(nested.wait(), 42);
    // The same through the runtime-free block_on (the task's poll claims the job).
    let nested = pool.spawn_task(|| bridge_core::block_on(bridge_rayon::spawn(|| 8)));
    assert_eq!(nested.wait(), 8);
    // Several levels deep, all on the one thread.
    fn depth(n: u32) -> u32 {
        if n == 0 {
            return 0;
        }
        bridge_rayon::spawn(move || depth(n - 1)).wait() + 1
    }
    assert_eq!(pool.spawn_task(|| depth(32)).wait(), 32);
}

#[test]
fn a_job_spawned_from_a_worker_runs_in_that_workers_pool() {
    let pool = pool(2);
    let index = pool
        .spawn_task(|| bridge_rayon::spawn(rayon::current_thread_index).wait())
        .wait();
    assert!(matches!(index, Some(0 | 1)));
    let outside = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .thread_name(|_| String::from("other-pool"))
        .build()
        .unwrap();
    let name = outside
        .spawn_task(|| {
            bridge_rayon::spawn(|| std::thread::current().name().map(String::from)).wait()
        })
        .wait();
    assert_eq!(name.as_deref(), Some("other-pool"));
}

#[test]
fn the_task_is_small_send_and_unpin() {
    fn send_unpin<T: Send + Unpin>() {}
    send_unpin::<bridge_rayon::Task<Vec<u8>>>();
    assert!(
        std::mem::size_of::<bridge_rayon::Task<[u8; 256]>>() <= 4 * std::mem::size_of::<usize>()
    );
}

#[test]
fn a_worker_claims_each_of_its_queued_tasks_in_the_order_it_waits() {
    let pool = pool(1);
    let (tx, rx) = mpsc::channel();
    pool.spawn(move || {
        // Both jobs queue behind this one on the pool's only thread, in FIFO order: each
        // wait claims its own job, the second before the first.
        let first = bridge_rayon::spawn_fifo(|| 1);
        let second = bridge_rayon::spawn_fifo(|| 2);
        tx.send(second.wait() + first.wait()).unwrap();
    });
    assert_eq!(rx.recv_timeout(Duration::from_secs(30)), Ok(3));
}

#[test]
fn wait_deadline_and_try_get_give_the_value_of_a_finished_task() {
    let mut task = bridge_rayon::spawn(|| 11);
    assert_eq!(
        task.wait_deadline(Instant::now() + Duration::from_secs(30)),
        Some(11)
    );
    let mut task = bridge_rayon::spawn(|| 12);
    let deadline = Instant::now() + Duration::from_secs(30);
    let value = loop {
        if let Some(value) = task.try_get() {
            break value;
        }
        assert!(Instant::now() < deadline, "try_get never gave the value");
        std::thread::yield_now();
    };
    assert_eq!(value, 12);
}

#[test]
fn debug_output_shows_the_state() {
    let pool = pool(1);
    let open = gate(&pool);
    let (flag_tx, flag_rx) = mpsc::channel();
    let task = pool.spawn_cancellable_task(move |flag| flag_tx.send(format!("{flag:?}")).unwrap());
    assert_eq!(format!("{task:?}"), "Task { is_finished: false }");
    drop(open);
    drain(&pool);
    assert_eq!(format!("{task:?}"), "Task { is_finished: true }");
    task.wait();
    assert_eq!(
        flag_rx.recv().unwrap(),
        "CancelFlag { is_cancelled: false }"
    );
}

#[test]
fn is_finished_follows_the_job_and_stays_true_once_the_value_is_taken() {
    let pool = pool(1);
    let open = gate(&pool);
    let mut task = pool.spawn_task(|| 4);
    assert!(!task.is_finished());
    assert_eq!(task.try_get(), None);
    drop(open);
    drain(&pool);
    assert!(task.is_finished());
    assert_eq!(task.try_get(), Some(4));
    assert!(task.is_finished());

    let done = {
        let open = gate(&pool);
        let task = pool.spawn_task(|| 5);
        drop(open);
        drain(&pool);
        task
    };
    assert!(done.is_finished());
    assert_eq!(done.wait(), 5);
}

#[test]
fn a_completed_poll_terminates_the_task_and_later_takes_report_the_value_gone() {
    use futures::future::FusedFuture;

    let mut task = bridge_rayon::spawn(|| 6);
    assert!(!task.is_terminated());
    assert_eq!(futures::executor::block_on(&mut task), 6);
    assert!(task.is_terminated());
    assert!(task.is_finished());
    let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task.try_get()));
    let message = again.unwrap_err();
    assert!(
        message
            .downcast_ref::<&str>()
            .is_some_and(|m| m.contains("polled after it completed")),
        "{message:?}"
    );
    assert!(task.join().unwrap_err().is_lost());

    let mut failed = bridge_rayon::spawn(|| -> u8 { std::panic::panic_any(8u32) }).catch_unwind();
    let err = futures::executor::block_on(&mut failed).unwrap_err();
    assert_eq!(err.into_panic().downcast_ref::<u32>(), Some(&8));
    assert!(failed.is_terminated());
}

#[test]
fn a_select_loop_takes_each_task_once() {
    let pool = pool(1);
    let open = gate(&pool);
    let mut fast = bridge_rayon::spawn(|| 1u32);
    let mut slow = pool.spawn_task(|| 2u32);
    let mut open = Some(open);
    let mut got = Vec::new();
    futures::executor::block_on(async {
        loop {
            futures::select! {
                n = fast => {
                    got.push(n);
                    // Only now let the slow one run: the loop polls again meanwhile, and a
                    // finished `fast` must be skipped, not polled again (which would panic).
                    drop(open.take());
                }
                n = slow => got.push(n),
                complete => break,
            }
        }
    });
    assert_eq!(got, [1, 2]);
}

/// A waker may poll the task it wakes on the waking thread (an executor that runs woken tasks
/// inline): the job hands its outcome over and releases its lock before it wakes, so that
/// poll takes the value instead of blocking on the lock for good.
#[test]
fn a_waker_that_polls_its_task_inline_gets_the_value() {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::Mutex;
    use std::task::{Context, Poll, Wake, Waker};

    struct Inline {
        task: Mutex<Option<bridge_rayon::Task<u32>>>,
        got: Mutex<mpsc::Sender<u32>>,
    }
    impl Inline {
        fn poll(self: &Arc<Self>, waker: &Waker) {
            let mut slot = self.task.lock().unwrap();
            let task = slot.as_mut().expect("polled after it finished");
            if let Poll::Ready(value) = Pin::new(task).poll(&mut Context::from_waker(waker)) {
                *slot = None;
                self.got.lock().unwrap().send(value).unwrap();
            }
        }
    }
    impl Wake for Inline {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.poll(&Waker::from(Arc::clone(self)));
        }
    }

    let pool = pool(1);
    let (start, started) = mpsc::channel::<()>();
    let task = pool.spawn_task(move || {
        started.recv().unwrap();
        7
    });
    let (got_tx, got) = mpsc::channel();
    let inline = Arc::new(Inline {
        task: Mutex::new(Some(task)),
        got: Mutex::new(got_tx),
    });
    // The first poll stores the waker; the job then finishes on the pool and wakes it there.
    inline.poll(&Waker::from(Arc::clone(&inline)));
    start.send(()).unwrap();
    assert_eq!(got.recv_timeout(Duration::from_secs(10)), Ok(7));
}
