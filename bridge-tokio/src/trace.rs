//! Feature `tracing`: the span current at a call follows its future into every poll, and the
//! bridge's notable events are logged. Without the feature every function here is a no-op
//! (the future passes through unchanged) and nothing of tracing is compiled in.

use bridge_core::Error;
use std::future::Future;

/// `future`, entering the span current here (at the call) around each of its polls and its
/// drop, on the handoff worker that runs it. Only the handoff route needs this: every other
/// route polls and drops the future on the calling thread, inside the call, where the span
/// is current already; wrapping it there too would add to every ready call the dispatcher
/// lookup and a larger future to move, for nothing.
///
/// A program that never installed a subscriber can have no current span, and one relaxed
/// load (`has_been_set`) says so: the call then skips `Span::current()`'s dispatcher lookup
/// and carries a disabled span, whose enter and exit do nothing.
#[cfg(feature = "tracing")]
pub(crate) fn instrument<F: Future>(future: F) -> tracing::instrument::Instrumented<F> {
    let span = if tracing::dispatcher::has_been_set() {
        tracing::Span::current()
    } else {
        tracing::Span::none()
    };
    tracing::Instrument::instrument(future, span)
}

#[cfg(not(feature = "tracing"))]
pub(crate) fn instrument<F: Future>(future: F) -> F {
    future
}

/// A lost [`Error`], logged (warn) where it is made: the runtime running the future
/// shut down first. The bridge's errors are logged where they arise, not by inspecting
/// every call's result: with the feature on, a check on the result made the ready path copy
/// the value through memory it had just written (a store-forwarding stall on every ready
/// call).
pub(crate) fn lost() -> Error {
    #[cfg(feature = "tracing")]
    log_lost();
    Error::lost()
}

/// An unavailable [`Error`], logged (error) where it is made: no thread or runtime
/// could be started to run the future.
pub(crate) fn unavailable(error: std::io::Error) -> Error {
    #[cfg(feature = "tracing")]
    log_unavailable(&error);
    Error::unavailable(error)
}

#[cfg(feature = "tracing")]
#[cold]
#[inline(never)]
fn log_lost() {
    tracing::warn!("run_blocking: the runtime running the future shut down first (Lost)");
}

#[cfg(feature = "tracing")]
#[cold]
#[inline(never)]
fn log_unavailable(error: &std::io::Error) {
    tracing::error!(%error, "run_blocking: no thread or runtime to run the future (Unavailable)");
}

/// A call found its multi-thread runtime shutting down: the future goes to the I/O runtime.
pub(crate) fn moved_off_dying_runtime() {
    #[cfg(feature = "tracing")]
    tracing::info!(
        "run_blocking: the runtime is shutting down; the future runs on the I/O runtime"
    );
}

/// The handoff pool started a worker thread.
pub(crate) fn handoff_worker_started() {
    #[cfg(feature = "tracing")]
    tracing::debug!("handoff pool: a new worker thread started");
}

/// The handoff pool is at its cap and its queue was empty: a burst of queued calls starts.
/// (Later calls of the same burst are not logged.)
pub(crate) fn handoff_queue_started(max: usize) {
    #[cfg(feature = "tracing")]
    tracing::info!(
        max,
        "handoff pool at its cap: calls queue until a worker frees up"
    );
    #[cfg(not(feature = "tracing"))]
    let _ = max;
}
