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
/// use bridge::BridgeError;
///
/// let err = bridge::try_run_blocking(async { panic!("bad range") }).unwrap_err();
/// assert!(err.is_panic());
/// assert_eq!(err.to_string(), "the future panicked: bad range");
/// ```
///
/// `?` into the usual boxed errors, and into `anyhow`:
///
/// ```
/// fn boxed() -> Result<u32, Box<dyn std::error::Error + Send + Sync>> {
///     Ok(bridge::try_run_blocking(async { 7 })?)
/// }
/// fn with_anyhow() -> anyhow::Result<u32> {
///     Ok(bridge::try_run_blocking(async { 8 })?)
/// }
/// assert_eq!(boxed().unwrap() + with_anyhow().unwrap(), 15);
///
/// fn send_sync_static<E: Send + Sync + 'static>(_: &E) {}
/// send_sync_static(&bridge::BridgeError::NotSendOnHandoff);
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
    /// same event as a `bridge::TaskError` that [`is_lost`](Self::is_lost).
    ///
    /// Keep the runtime (or the `IoRuntime`) alive for as long as calls may use it. A runtime
    /// that is already shutting down when the call starts is not used: the call runs on the
    /// shared I/O runtime instead.
    Lost,
    /// The deadline passed before the future finished, and the future was dropped.
    ///
    /// Give it more time, or check that its I/O is not bound to a runtime that the call
    /// blocks (a socket created on the calling current-thread runtime cannot make progress
    /// while that runtime's only thread waits here). When the call was made on a
    /// current-thread runtime, the [`Timeout`] says so
    /// ([`is_stalled_current_thread`](Timeout::is_stalled_current_thread)), and its message
    /// names that cause and its remedies.
    TimedOut(Timeout),
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
    /// let err = bridge::try_run_blocking(async { panic!("no") }).unwrap_err();
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
    /// let io = bridge::IoRuntime::new(1).unwrap();
    /// let handle = io.handle().clone();
    /// drop(io);
    /// let late = bridge::IoRuntime::from_handle(handle);
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
    /// let err = bridge::try_run_blocking(async { std::panic::panic_any(7u8) }).unwrap_err();
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
    /// let err = bridge::BridgeError::NotSendOnHandoff;
    /// assert!(err.try_into_panic().is_err());
    /// ```
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send + 'static>, Self> {
        match self {
            Self::Panicked(panic) => Ok(panic.into_payload()),
            other => Err(other),
        }
    }
}

/// Why a call's deadline passed without an output: what [`BridgeError::TimedOut`] carries.
///
/// Its message says that the deadline passed. When the call was made on a current-thread
/// runtime (its `block_on` body, a task, a `LocalSet` or a `spawn_blocking` thread there), it
/// says more: that runtime ran none of its tasks while its thread waited in (or for) the call,
/// so a future that needs one of them (a server spawned there, a socket created there) could
/// never have finished; and what to do instead (await the future there, or run those tasks on
/// another runtime: in a test, `#[tokio::test(flavor = "multi_thread")]`). See
/// [`set_stall_warning`](crate::set_stall_warning) for the warning such a call logs before its
/// deadline.
///
/// Opaque: only the bridge makes one.
///
/// # Examples
///
/// ```
/// use bridge::BridgeError;
/// use std::time::Duration;
///
/// let slow = async { tokio::time::sleep(Duration::from_secs(60)).await };
///
/// // A plain thread: the deadline passed, nothing more to say.
/// let err = bridge::try_run_blocking_timeout(slow, Duration::from_millis(5)).unwrap_err();
/// let BridgeError::TimedOut(timeout) = &err else { panic!("{err:?}") };
/// assert!(!timeout.is_stalled_current_thread());
/// assert_eq!(err.to_string(), "the deadline passed before the future finished");
///
/// // A current-thread runtime blocked by the call: the message names the cause.
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// let err = rt.block_on(async {
///     let slow = async { tokio::time::sleep(Duration::from_secs(60)).await };
///     bridge::try_run_blocking_timeout(slow, Duration::from_millis(5)).unwrap_err()
/// });
/// let BridgeError::TimedOut(timeout) = &err else { panic!("{err:?}") };
/// assert!(timeout.is_stalled_current_thread());
/// assert!(err.to_string().contains("flavor = \"multi_thread\""));
/// ```
#[derive(Debug, Clone)]
pub struct Timeout {
    stalled_current_thread: bool,
}

impl Timeout {
    /// A deadline that passed, with nothing more to say.
    pub(crate) fn elapsed() -> Self {
        Self {
            stalled_current_thread: false,
        }
    }

    /// A deadline that passed while the call blocked a current-thread runtime.
    #[cfg(not(bridge_loom))]
    pub(crate) fn stalled_current_thread() -> Self {
        Self {
            stalled_current_thread: true,
        }
    }

    /// Whether the call was made on a current-thread runtime, which ran none of its tasks
    /// while the call waited: a future that needed one of them could not finish.
    ///
    /// # Examples
    ///
    /// ```
    /// let slow = async { tokio::time::sleep(std::time::Duration::from_secs(60)).await };
    /// let timeout = std::time::Duration::from_millis(5);
    /// match bridge::try_run_blocking_timeout(slow, timeout) {
    ///     Err(bridge::BridgeError::TimedOut(timeout)) => {
    ///         assert!(!timeout.is_stalled_current_thread()) // a plain thread
    ///     }
    ///     other => panic!("{other:?}"),
    /// }
    /// ```
    pub fn is_stalled_current_thread(&self) -> bool {
        self.stalled_current_thread
    }
}

impl fmt::Display for Timeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the deadline passed before the future finished")?;
        if self.stalled_current_thread {
            f.write_str(
                ", and the call was made on a current-thread runtime (yours, or one of the \
                 bridge's drivers, which run the tasks spawned in calls made with no runtime), \
                 which runs none of its tasks while its thread waits in (or for) the call: a \
                 future that needs one of them (a server spawned there, a socket created there) \
                 cannot finish. Await the future there instead of calling run_blocking, or run \
                 those tasks on another runtime (bridge::spawn_io; in a test: \
                 #[tokio::test(flavor = \"multi_thread\")])",
            )?;
        }
        Ok(())
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
/// use bridge::BridgeError;
///
/// match bridge::try_run_blocking(async { panic!("corrupt header") }) {
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
    /// let err = bridge::try_run_blocking(async { panic!("no") }).unwrap_err();
    /// let bridge::BridgeError::Panicked(panic) = err else { unreachable!() };
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
    /// let err = bridge::try_run_blocking(async { std::panic::panic_any(3u8) }).unwrap_err();
    /// let bridge::BridgeError::Panicked(panic) = err else { unreachable!() };
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
            Self::TimedOut(timeout) => f.debug_tuple("TimedOut").field(timeout).finish(),
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
            Self::TimedOut(timeout) => fmt::Display::fmt(timeout, f),
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
