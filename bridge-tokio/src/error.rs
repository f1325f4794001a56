//! Why `try_run_blocking` returned no output.

use std::any::Any;
use std::fmt;
use std::sync::{Mutex, PoisonError};

/// Why a [`try_run_blocking`](crate::try_run_blocking) family call returned no output.
///
/// Each variant names one cause: [`Panicked`](Self::Panicked) only ever carries the future's
/// own panic; what goes wrong in tokio or in the bridge has a variant of its own.
///
/// A `BridgeError` is `Send + Sync + 'static`, so `?` turns it into
/// `Box<dyn std::error::Error + Send + Sync>` or `anyhow::Error`. The messages say what
/// happened; what to do about it is below, variant by variant.
///
/// # Examples
///
/// ```
/// use bridge_tokio::BridgeError;
///
/// let err = bridge_tokio::try_run_blocking(async { panic!("bad range") }).unwrap_err();
/// assert!(err.is_panic());
/// assert_eq!(err.to_string(), "the future panicked: bad range");
/// ```
///
/// `?` into the usual boxed errors, and into `anyhow`:
///
/// ```
/// fn boxed() -> Result<u32, Box<dyn std::error::Error + Send + Sync>> {
///     Ok(bridge_tokio::try_run_blocking(async { 7 })?)
/// }
/// fn with_anyhow() -> anyhow::Result<u32> {
///     Ok(bridge_tokio::try_run_blocking(async { 8 })?)
/// }
/// assert_eq!(boxed().unwrap() + with_anyhow().unwrap(), 15);
///
/// fn send_sync_static<E: Send + Sync + 'static>(_: &E) {}
/// send_sync_static(&bridge_tokio::BridgeError::TimedOut);
/// ```
#[non_exhaustive]
pub enum BridgeError {
    /// The future panicked; [`Panic`] holds the payload.
    ///
    /// To go on with the panic, pass [`into_panic`](Self::into_panic)'s payload to
    /// `std::panic::resume_unwind`, or call [`run_blocking`](crate::run_blocking), which does.
    Panicked(Panic),
    /// The runtime driving the future shut down before the future finished, so no output
    /// will come: a timer or I/O resource of the future failed with tokio's "being shutdown"
    /// panic (an [`IoRuntime`](crate::IoRuntime) dropped with calls in flight, a handle kept
    /// after its runtime shut down), or the handoff worker running the future was lost. The
    /// same event as a `bridge_rayon::TaskError` that [`is_lost`](Self::is_lost).
    ///
    /// Keep the runtime (or the `IoRuntime`) alive for as long as calls may use it. A runtime
    /// that is already shutting down when the call starts is not used: the call runs on the
    /// shared I/O runtime instead.
    Lost,
    /// The deadline passed before the future finished, and the future was dropped.
    ///
    /// Give it more time, or check that its I/O is not bound to a runtime that the call
    /// blocks (a socket created on the calling current-thread runtime cannot make progress
    /// while that runtime's only thread waits here).
    TimedOut,
    /// A `!Send` future ([`run_blocking_local`](crate::run_blocking_local)) was called where
    /// the only route is a handoff to another thread: a current-thread runtime's threads, or
    /// a thread-local destructor that runs after tokio's at thread exit.
    ///
    /// Await the future there instead, or make it `Send` and call
    /// [`run_blocking`](crate::run_blocking).
    NotSendOnHandoff,
    /// The bridge could not start what the call needed: the operating system refused a
    /// handoff worker thread or a runtime (too many threads, no file descriptors left).
    Unavailable(std::io::Error),
}

impl BridgeError {
    /// Whether the future panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = bridge_tokio::try_run_blocking(async { panic!("no") }).unwrap_err();
    /// assert!(err.is_panic());
    /// ```
    pub fn is_panic(&self) -> bool {
        matches!(self, Self::Panicked(_))
    }

    /// Whether what ran the future was lost before it finished ([`Lost`](Self::Lost)).
    ///
    /// # Examples
    ///
    /// ```
    /// let io = bridge_tokio::IoRuntime::new(1).unwrap();
    /// let handle = io.handle().clone();
    /// drop(io);
    /// let late = bridge_tokio::IoRuntime::from_handle(handle);
    /// let slow = async { tokio::time::sleep(std::time::Duration::from_secs(1)).await };
    /// assert!(late.try_run_blocking(slow).unwrap_err().is_lost());
    /// ```
    pub fn is_lost(&self) -> bool {
        matches!(self, Self::Lost)
    }

    /// The panic payload, to resume with `std::panic::resume_unwind`.
    ///
    /// # Panics
    ///
    /// If the error is not [`Panicked`](Self::Panicked) (see
    /// [`try_into_panic`](Self::try_into_panic)).
    ///
    /// # Examples
    ///
    /// ```
    /// let err = bridge_tokio::try_run_blocking(async { std::panic::panic_any(7u8) }).unwrap_err();
    /// assert_eq!(err.into_panic().downcast_ref::<u8>(), Some(&7));
    /// ```
    #[track_caller]
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        match self.try_into_panic() {
            Ok(payload) => payload,
            Err(other) => {
                panic!("BridgeError::into_panic on an error that is not a panic: {other}")
            }
        }
    }

    /// The panic payload, or the error itself if it is not a panic.
    ///
    /// # Errors
    ///
    /// Gives the error back unchanged when it is not [`Panicked`](Self::Panicked).
    ///
    /// # Examples
    ///
    /// ```
    /// let err = bridge_tokio::BridgeError::TimedOut;
    /// assert!(err.try_into_panic().is_err());
    /// ```
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send + 'static>, Self> {
        match self {
            Self::Panicked(panic) => Ok(panic.into_payload()),
            other => Err(other),
        }
    }
}

/// The payload of a future's panic, as `std::panic::catch_unwind` gave it, with its message
/// copied out when it is a string.
///
/// The payload is only `Send`; it sits in a `Mutex` that is never locked (only
/// [`into_payload`](Self::into_payload) takes it, by value), which makes `Panic`, and so
/// [`BridgeError`], `Sync`.
///
/// # Examples
///
/// ```
/// use bridge_tokio::BridgeError;
///
/// match bridge_tokio::try_run_blocking(async { panic!("corrupt header") }) {
///     Err(BridgeError::Panicked(panic)) => assert_eq!(panic.message(), Some("corrupt header")),
///     other => panic!("{other:?}"),
/// }
/// ```
pub struct Panic {
    message: Option<String>,
    payload: Mutex<Box<dyn Any + Send + 'static>>,
}

impl Panic {
    pub(crate) fn new(payload: Box<dyn Any + Send + 'static>) -> Self {
        Self {
            message: crate::shutdown::message(&*payload).map(str::to_owned),
            payload: Mutex::new(payload),
        }
    }

    /// The panic message, if the payload is a string (as `panic!` with a message makes it).
    ///
    /// # Examples
    ///
    /// ```
    /// let err = bridge_tokio::try_run_blocking(async { panic!("no") }).unwrap_err();
    /// let bridge_tokio::BridgeError::Panicked(panic) = err else { unreachable!() };
    /// assert_eq!(panic.message(), Some("no"));
    /// ```
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// The payload, to resume with `std::panic::resume_unwind` or to downcast.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = bridge_tokio::try_run_blocking(async { std::panic::panic_any(3u8) }).unwrap_err();
    /// let bridge_tokio::BridgeError::Panicked(panic) = err else { unreachable!() };
    /// assert_eq!(panic.into_payload().downcast_ref::<u8>(), Some(&3));
    /// ```
    pub fn into_payload(self) -> Box<dyn Any + Send + 'static> {
        self.payload
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for Panic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.message {
            Some(message) => f.debug_tuple("Panic").field(message).finish(),
            None => f.write_str("Panic(..)"),
        }
    }
}

impl fmt::Debug for BridgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Panicked(panic) => match panic.message() {
                Some(message) => f.debug_tuple("Panicked").field(&message).finish(),
                None => f.write_str("Panicked(..)"),
            },
            Self::Lost => f.write_str("Lost"),
            Self::TimedOut => f.write_str("TimedOut"),
            Self::NotSendOnHandoff => f.write_str("NotSendOnHandoff"),
            Self::Unavailable(error) => f.debug_tuple("Unavailable").field(error).finish(),
        }
    }
}

impl fmt::Display for BridgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Panicked(panic) => match panic.message() {
                Some(message) => write!(f, "the future panicked: {message}"),
                None => f.write_str("the future panicked"),
            },
            Self::Lost => {
                f.write_str("the runtime driving the future shut down before it finished")
            }
            Self::TimedOut => f.write_str("the deadline passed before the future finished"),
            Self::NotSendOnHandoff => f.write_str(
                "a !Send future cannot be handed to another thread, the only route here",
            ),
            Self::Unavailable(error) => {
                write!(f, "the bridge could not start a thread or runtime: {error}")
            }
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
