//! Why `try_run_blocking` returned no output.

use std::any::Any;
use std::fmt;

/// Why a [`try_run_blocking`](crate::try_run_blocking) family call returned no output.
///
/// Each variant names one cause: [`Panicked`](Self::Panicked) only ever carries the future's
/// own panic; what goes wrong in tokio or in the bridge has a variant of its own.
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
    /// The runtime driving the future shut down before it finished, so no output will come:
    /// the runtime dropped the task running it, or a timer or I/O resource of the future
    /// failed with tokio's "being shutdown" panic (an [`IoRuntime`](crate::IoRuntime) dropped
    /// with calls in flight, a handle kept after its runtime shut down). A runtime that is
    /// already shutting down when the call starts is not used: the call runs on the shared
    /// I/O runtime instead.
    RuntimeGone,
    /// The deadline passed before the future finished. The future was cancelled.
    TimedOut,
    /// A `!Send` future cannot be handed to another thread, and this context (a
    /// current-thread runtime, or a thread-local destructor after tokio's) can only be served
    /// by a handoff.
    NotSendOnHandoff,
    /// The bridge could not start what the call needed: the operating system refused a
    /// handoff worker thread or a runtime (too many threads, no file descriptors left).
    Unavailable(std::io::Error),
}

impl BridgeError {
    /// The panic message, if the payload is a string (as `panic!` with a message makes it).
    fn message(&self) -> Option<&str> {
        match self {
            Self::Panicked(payload) => crate::shutdown::message(&**payload),
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
            Self::Unavailable(error) => f.debug_tuple("Unavailable").field(error).finish(),
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
                "the runtime driving the future shut down before it finished; keep the \
                 runtime (or the IoRuntime) alive for as long as calls may use it",
            ),
            Self::TimedOut => f.write_str(
                "the deadline passed before the future finished, and it was cancelled; \
                 give it more time, or check that its I/O is not bound to a runtime that \
                 this call blocks (a socket created on the calling current-thread runtime)",
            ),
            Self::NotSendOnHandoff => f.write_str(
                "a !Send future cannot leave this thread, and a current-thread runtime or a \
                 thread-local destructor after tokio's can only hand a future to another \
                 thread; await the future instead, or make it Send and use run_blocking",
            ),
            Self::Unavailable(error) => write!(
                f,
                "the bridge could not start a thread or runtime for the call: {error}"
            ),
        }
    }
}

impl std::error::Error for BridgeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Unavailable(error) => Some(error),
            _ => None,
        }
    }
}
