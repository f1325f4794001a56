//! Why `try_run_blocking` returned no output.

use std::any::Any;
use std::fmt;

/// Why a [`try_run_blocking`](crate::try_run_blocking) family call returned no output.
///
/// # Examples
///
/// ```
/// use bridge_tokio::BridgeError;
///
/// let err = bridge_tokio::try_run_blocking(async { panic!("bad range") }).unwrap_err();
/// assert!(matches!(err, BridgeError::Panicked(_)));
/// assert_eq!(err.to_string(), "the future panicked: bad range");
/// ```
#[non_exhaustive]
pub enum BridgeError {
    /// The future panicked; this is the payload, as `std::panic::catch_unwind` gives it.
    Panicked(Box<dyn Any + Send + 'static>),
    /// What was running the future stopped before it finished, so no output will come: its
    /// runtime shut down (or dropped the task), or the handoff worker running it died.
    RuntimeGone,
    /// The deadline passed before the future finished. The future was cancelled.
    TimedOut,
    /// A `!Send` future cannot be handed to another thread, and this context (a
    /// current-thread runtime or a `LocalSet`) can only be served by a handoff.
    NotSendOnHandoff,
}

impl BridgeError {
    /// The panic message, if the payload is a string (as `panic!` with a message makes it).
    fn message(&self) -> Option<&str> {
        match self {
            Self::Panicked(payload) => payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str)),
            _ => None,
        }
    }
}

impl fmt::Debug for BridgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Panicked(_) => match self.message() {
                Some(message) => f.debug_tuple("Panicked").field(&message).finish(),
                None => f.write_str("Panicked(..)"),
            },
            Self::RuntimeGone => f.write_str("RuntimeGone"),
            Self::TimedOut => f.write_str("TimedOut"),
            Self::NotSendOnHandoff => f.write_str("NotSendOnHandoff"),
        }
    }
}

impl fmt::Display for BridgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Panicked(_) => match self.message() {
                Some(message) => write!(f, "the future panicked: {message}"),
                None => f.write_str("the future panicked"),
            },
            Self::RuntimeGone => f.write_str(
                "the runtime (or handoff worker) running the future stopped before it \
                 finished; keep the runtime (or the IoRuntime) alive for as long as calls may \
                 use it, and do not wait on a runtime's timers or I/O from a value it drops \
                 while it shuts down (use IoRuntime::run_blocking there)",
            ),
            Self::TimedOut => f.write_str(
                "the deadline passed before the future finished, and it was cancelled; \
                 give it more time, or check that its I/O is not bound to a runtime that \
                 this call blocks (a socket created on the calling current-thread runtime)",
            ),
            Self::NotSendOnHandoff => f.write_str(
                "a !Send future cannot leave this thread, and a current-thread runtime or a \
                 LocalSet cannot be blocked in place; await the future instead, or make it Send \
                 and use run_blocking",
            ),
        }
    }
}

impl std::error::Error for BridgeError {}
