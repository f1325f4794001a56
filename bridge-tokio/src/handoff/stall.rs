//! A handoff that a current-thread runtime waits for too long is named, not silent.
//!
//! A current-thread runtime runs its tasks only while its one thread sits in
//! `Runtime::block_on`. A call made there hands its future to a handoff worker and blocks that
//! thread: a future that needs a task of the same runtime (a mock server spawned in a
//! `#[tokio::test]`, then a sync client call) can never finish. The caller's wait is split at a
//! threshold (`bridge_core::settings::stall_warning`): a call still waiting then, whose caller is a current-thread
//! runtime, logs one warning (feature `tracing`) and counts in
//! [`IoMetrics::stalled_handoffs`](crate::IoMetrics::stalled_handoffs). It only warns: the call
//! waits on as before.
//!
//! A deadline that passes on such a call gives a timeout error that names the stalled runtime
//! only when a stall was seen: the caller's runtime has tasks alive, or tasks woken and
//! queued, at the deadline (tokio's `num_alive_tasks` and `global_queue_depth`). A
//! current-thread runtime polls its tasks only inside its own `block_on`, so none of those
//! could run during the wait: a server spawned there never accepted, a task that would have
//! fed the future never ran. A future that waits on something else (a silent server on
//! another runtime, a long sleep created in the future) gives the plain timeout. What tokio's
//! stable metrics do not show is missed: a socket or a timer created in the runtime's body and
//! then awaited inside the future needs that runtime's driver but no task of it, so it gives
//! the plain timeout too (the threshold's warning and count above still name it).
//!
//! The caller's context is read only when the threshold or the deadline has passed, on the
//! calling thread (which is still inside the call, so still in its runtime's context): a call
//! that finishes in time pays one clock read and one relaxed load, nothing of tokio.

use bridge_core::Error;
use bridge_core::oneshot::RecvTimeoutError;
use bridge_core::scoped::Pending;
use imp::{WATCHES, caller_runtime_stalled, passed_threshold, threshold_from_now};
use std::time::Instant;

/// The handoff caller's wait for its outcome until `deadline`, split at the stall threshold
/// (after the handoff's watch, so the receive itself does not spin again):
/// it waits until the threshold (or the deadline, whichever is first); if the outcome is not
/// there by the threshold and the caller is a current-thread runtime, it warns and counts,
/// once; then it waits the rest. An outcome already there (the usual case after the
/// handoff's watch) skips the clock.
///
/// loom builds wait in one piece: the models cover the handoff protocol, which the split
/// does not change, and each timed wait would add branch points to every model.
pub(crate) fn recv_until<R>(
    pending: &mut Pending<'_, R>,
    deadline: Option<Instant>,
) -> Result<R, RecvTimeoutError> {
    if WATCHES && !pending.is_ready() {
        if let Some((threshold, at)) = threshold_from_now() {
            if deadline.is_none_or(|deadline| at < deadline) {
                match pending.recv_until(Some(at)) {
                    Err(RecvTimeoutError::Timeout) => passed_threshold(threshold),
                    received => return received,
                }
            }
        }
    }
    pending.recv_until(deadline)
}

/// The error of a handoff whose deadline passed, read on the calling thread after the
/// wait: it names the stalled current-thread runtime when the caller is one and that runtime
/// had tasks that could not run (see the module's docs).
pub(crate) fn timed_out() -> Error {
    if caller_runtime_stalled() {
        Error::timed_out_stalling_current_thread()
    } else {
        Error::timed_out()
    }
}

/// The std build: the threshold's watch and the stalled runtime's detection.
#[cfg(not(bridge_loom))]
mod imp {
    use std::time::{Duration, Instant};

    /// Whether waits are split at the threshold.
    pub(super) const WATCHES: bool = true;

    #[inline]
    pub(super) fn threshold_from_now() -> Option<(Duration, Instant)> {
        let threshold = bridge_core::settings::stall_warning();
        Some((threshold, Instant::now().checked_add(threshold)?))
    }

    /// The stall warning. It names timers first: a `sleep` or `timeout` created in the runtime's
    /// body (tokio's own `nesting` example) is the shape users meet most, and the one with no
    /// task to point at.
    const STALLED: &str = "run_blocking: a call made on a current-thread runtime is still waiting \
         for its future, and that runtime drives none of its timers, sockets or tasks while its \
         thread waits in (or for) the call: a future that needs one of them (a tokio::time::sleep \
         or timeout created there, a socket created there, a server spawned there) never \
         finishes. Create the future inside the async block given to run_blocking, or await it \
         there instead of calling run_blocking; run those tasks on another runtime \
         (bridge::spawn_io; in a test: #[tokio::test(flavor = \"multi_thread\")]), or bound the \
         wait with try_run_blocking_timeout";

    /// A wait passed `threshold`: warn and count if the caller is a current-thread runtime.
    #[cold]
    #[inline(never)]
    pub(super) fn passed_threshold(threshold: Duration) {
        if caller_is_current_thread() {
            crate::metrics::stalled_handoff();
            warn_stalled(threshold);
        }
    }

    /// Names a stalled call where users look. With the feature `tracing` and a subscriber
    /// installed, a warning to it, for each call. Otherwise (no feature, or no subscriber: a
    /// `#[tokio::test]` usually has none) the call may well hang for good, and a hang is all the
    /// user would see, where tokio's own `Handle::block_on` panics with a message in the same
    /// shape: so the first such call of the process writes the warning to stderr, once. It goes
    /// to the stderr stream itself, not through `eprintln!`, which the test harness captures and
    /// shows only for a test that ends, never for one that hangs.
    fn warn_stalled(threshold: Duration) {
        #[cfg(feature = "tracing")]
        if tracing::dispatcher::has_been_set() {
            tracing::warn!(waited = ?threshold, "{STALLED}");
            return;
        }
        static WRITTEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        // ORDERING: Relaxed: the flag only elects one writer; it publishes nothing else.
        if !WRITTEN.swap(true, std::sync::atomic::Ordering::Relaxed) {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "warning: {STALLED} (waited {threshold:?}; written once per process, counted in \
                 bridge::metrics().io.stalled_handoffs; with the feature `tracing` and a \
                 subscriber, logged for each call)"
            );
        }
    }

    /// Whether the calling thread is in a current-thread runtime's context. Never panics: in a
    /// thread-local destructor after tokio's, `try_current` says the context is gone (not a
    /// current-thread runtime). Another flavor (a multi-thread runtime's thread, which the
    /// handoff serves too) keeps running its tasks on its workers.
    fn caller_is_current_thread() -> bool {
        matches!(
            tokio::runtime::Handle::try_current().map(|handle| handle.runtime_flavor()),
            Ok(tokio::runtime::RuntimeFlavor::CurrentThread)
        )
    }

    /// Whether the calling thread is in a current-thread runtime's context whose runtime holds
    /// tasks that could not run while its thread waited: tasks alive (spawned and not finished:
    /// a current-thread runtime polls them only inside its `block_on`, which is waiting in the
    /// call) or woken and queued. Read at the deadline, on the calling thread.
    pub(super) fn caller_runtime_stalled() -> bool {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return false;
        };
        if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::CurrentThread {
            return false;
        }
        let metrics = handle.metrics();
        metrics.num_alive_tasks() > 0 || metrics.global_queue_depth() > 0
    }
}

/// The loom build: the models' waits are not split (no clock), and no runtime is entered.
#[cfg(bridge_loom)]
mod imp {
    use std::time::{Duration, Instant};

    pub(super) const WATCHES: bool = false;

    pub(super) fn threshold_from_now() -> Option<(Duration, Instant)> {
        None
    }

    pub(super) fn passed_threshold(_: Duration) {}

    pub(super) fn caller_runtime_stalled() -> bool {
        false
    }
}

#[cfg(all(test, not(bridge_loom)))]
mod tests {
    use crate::io_runtime::IoRuntime;
    use std::sync::Mutex;
    use std::time::Duration;

    /// The threshold and the counter are the process's: one test at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    /// Gives `context` a call to make: a handoff (the route of every thread of a runtime
    /// that is not a multi-thread worker) whose future outlives a 100 ms threshold and then
    /// its 300 ms deadline; the call returns the stalled count it added and whether its
    /// timeout names a stalled current-thread runtime.
    fn handoff_past_threshold(context: impl FnOnce(&dyn Fn() -> (u64, bool))) {
        let _serial = SERIAL
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let previous = bridge_core::settings::stall_warning();
        bridge_core::settings::set_stall_warning(Duration::from_millis(100));
        context(&|| {
            let before = crate::metrics().stalled_handoffs;
            let slow = async { tokio::time::sleep(Duration::from_secs(60)).await };
            let deadline = std::time::Instant::now() + Duration::from_millis(300);
            let result = crate::handoff::run(IoRuntime::global().handle(), slow, Some(deadline));
            let err = result.expect_err("not timed out");
            assert!(err.is_timeout(), "{err:?}");
            let added = crate::metrics().stalled_handoffs - before;
            (added, err.to_string().contains("current-thread runtime"))
        });
        bridge_core::settings::set_stall_warning(previous);
    }

    #[test]
    fn a_plain_thread_neither_counts_nor_names_a_stall() {
        handoff_past_threshold(|call| assert_eq!(call(), (0, false)));
    }

    #[test]
    fn a_multi_thread_runtime_neither_counts_nor_names_a_stall() {
        handoff_past_threshold(|call| {
            let rt = tokio::runtime::Runtime::new().unwrap();
            assert_eq!(rt.block_on(async { call() }), (0, false), "block_on body");
            // As a `spawn_blocking` thread: the runtime's context entered, not a worker.
            let _context = rt.enter();
            assert_eq!(call(), (0, false), "the runtime's context entered");
        });
    }

    #[test]
    fn a_current_thread_runtime_with_a_task_counts_once_and_names_the_stall() {
        handoff_past_threshold(|call| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            let stalled = rt.block_on(async {
                // A task of the caller's runtime, which cannot run while its thread waits.
                let task = tokio::spawn(std::future::pending::<()>());
                let stalled = call();
                task.abort();
                stalled
            });
            assert_eq!(stalled, (1, true));
        });
    }

    #[test]
    fn a_current_thread_runtime_without_tasks_counts_once_and_times_out_plainly() {
        handoff_past_threshold(|call| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            assert_eq!(rt.block_on(async { call() }), (1, false));
        });
    }
}
