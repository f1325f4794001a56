//! Pools, gates and the watchdog the test files share.
#![allow(dead_code)]

use std::panic;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// A pool of `threads` threads.
pub fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

/// Occupies one thread of `pool` until the returned sender is dropped or sent to; returns
/// once the job has started.
pub fn gate(pool: &rayon::ThreadPool) -> mpsc::Sender<()> {
    let (open, gate) = mpsc::channel::<()>();
    let (started_tx, started) = mpsc::channel();
    pool.spawn(move || {
        started_tx.send(()).unwrap();
        let _ = gate.recv();
    });
    started.recv().unwrap();
    open
}

/// Waits until every job queued on `pool` so far has finished; call it from outside the pool.
///
/// A broadcast does not do it: a worker runs its broadcast job before the jobs injected from
/// outside the pool (rayon's `find_work` order), so jobs still in the injector run after it.
/// Here one job per thread joins a barrier with the caller: the injector is FIFO, so each
/// earlier job was taken before these, and each thread took its barrier job only after the
/// job it ran before.
pub fn drain(pool: &rayon::ThreadPool) {
    let threads = pool.current_num_threads();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(threads + 1));
    for _ in 0..threads {
        let barrier = std::sync::Arc::clone(&barrier);
        pool.spawn(move || {
            barrier.wait();
        });
    }
    barrier.wait();
}

/// How long a body may take before the watchdog calls it hung.
pub const WATCHDOG: Duration = Duration::from_secs(20);

/// Runs `body` on a thread of its own and gives its result; fails if it takes longer than
/// [`WATCHDOG`] (the thread is left behind), and resumes its panic if it panics.
pub fn watchdog<R: Send + 'static>(body: impl FnOnce() -> R + Send + 'static) -> R {
    let (done_tx, done) = mpsc::channel::<()>();
    let handle = thread::spawn(move || {
        let result = body();
        let _ = done_tx.send(());
        result
    });
    match done.recv_timeout(WATCHDOG) {
        // Finished, or panicked (the sender was dropped while unwinding).
        Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => match handle.join() {
            Ok(result) => result,
            Err(payload) => panic::resume_unwind(payload),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("hung: not done within {WATCHDOG:?}"),
    }
}
