//! loom models of the handoff protocol: the caller blocks on a oneshot while a loom thread,
//! standing in for the runtime's worker, runs (or drops) the job.
//!
//! ```sh
//! RUSTFLAGS="--cfg bridge_loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p threadbridge-tokio --release --test loom
//! ```
//!
//! The job is the future wrapped to catch its panic and send its outcome; the worker runs it
//! with bridge-core's `block_on` (the futures here need no reactor). bridge-core's loom build
//! checks the oneshot's frees and leaks; outputs carry a `loom::alloc::Track` and a drop
//! counter.
#![cfg(bridge_loom)]

use bridge_tokio::{__LoomPool, __loom_handoff, BridgeError};
use loom::alloc::Track;
use loom::thread;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Instant;

struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
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
        let (wait, job) = __loom_handoff(async { Track::new(7u32) });
        let worker = thread::spawn(move || bridge_core::block_on(job));
        let output = wait(None).expect("the output");
        assert_eq!(*output.get_ref(), 7);
        worker.join().unwrap();
    });
}

/// The caller's deadline races the job's completion: the caller gets the output or
/// `TimedOut`, and the output is dropped exactly once either way (by the caller, or where the
/// job ran when the caller had gone).
///
/// Catches: an output leaked when the caller timed out (Track leak); an output dropped twice;
/// a timeout that loses an output which arrived in time.
#[test]
fn caller_timeout_vs_completion() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let counter = drops.clone();
        let (wait, job) = __loom_handoff(async move { Track::new(Counted(counter)) });
        let worker = thread::spawn(move || bridge_core::block_on(job));
        match wait(Some(Instant::now())) {
            Ok(output) => drop(output),
            Err(BridgeError::TimedOut) => {}
            Err(other) => panic!("unexpected {other:?}"),
        }
        worker.join().unwrap();
        assert_eq!(drops.load(SeqCst), 1);
    });
}

/// The future panics on the worker: the payload reaches the caller, the worker thread does
/// not unwind.
///
/// Catches: a job that lets the panic escape (the worker thread dies and the caller sees
/// `RuntimeGone` instead of the payload).
#[test]
fn worker_panic_reaches_the_caller() {
    loom::model(|| {
        let (wait, job) = __loom_handoff(async { std::panic::panic_any(3u8) });
        let worker = thread::spawn(move || bridge_core::block_on(job));
        match wait(None) {
            Err(BridgeError::Panicked(payload)) => {
                assert_eq!(payload.downcast_ref::<u8>(), Some(&3));
            }
            other => panic!("expected the panic, got {:?}", other.map(|_| ())),
        }
        worker.join().expect("the panic must not escape the job");
    });
}

/// The runtime retires the job (drops it) before or during its run, racing the caller's
/// wait: the caller learns `RuntimeGone` instead of waiting forever, and nothing leaks.
///
/// Catches: a job whose drop does not close the channel (the caller blocks forever: loom
/// reports the deadlock); a future's captures leaked when the job is dropped.
#[test]
fn worker_retires_the_job() {
    loom::model(|| {
        let (gate_tx, gate_rx) = bridge_core::oneshot::channel::<()>();
        let captured = Track::new(());
        let (wait, job) = __loom_handoff(async move {
            let _keep = captured;
            // Never sent: the job stays pending until the worker drops it.
            let _ = gate_rx.await;
        });
        let worker = thread::spawn(move || {
            let mut job = std::pin::pin!(job);
            let waker = std::task::Waker::noop();
            let mut cx = std::task::Context::from_waker(waker);
            assert!(job.as_mut().poll(&mut cx).is_pending());
            // The runtime shuts down: the job is dropped unfinished.
        });
        assert!(matches!(wait(None), Err(BridgeError::RuntimeGone)));
        worker.join().unwrap();
        drop(gate_tx);
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
        let pool = loom::sync::Arc::new(__LoomPool::default());
        let runs = Arc::new(AtomicUsize::new(0));
        for round in 0..2 {
            let (done_tx, done_rx) = bridge_core::oneshot::channel();
            let counter = runs.clone();
            __LoomPool::submit(
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
