//! The family's one error type.

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::sync::{Mutex, PoisonError};

/// Why work run elsewhere gave no value: it panicked, its time limit passed, what ran it was
/// lost (its runtime shut down, its rayon pool dropped it), or the bridge could not start a
/// thread it needed.
///
/// Returned by [`Task::join`](crate::Task::join), a task's
/// [`catch_unwind`](crate::Task::catch_unwind), and the `try_run_blocking` functions. Its
/// message says what happened and what to do. An `Error` is `Send + Sync + 'static`, so `?`
/// turns it into `Box<dyn std::error::Error + Send + Sync>` or `anyhow::Error`.
///
/// # Examples
///
/// ```
/// let err = bridge::try_run_blocking(async { panic!("bad range") }).unwrap_err();
/// assert!(err.is_panic());
/// assert_eq!(err.to_string(), "the work panicked: bad range");
///
/// fn boxed() -> Result<u32, Box<dyn std::error::Error + Send + Sync>> {
///     Ok(bridge::try_run_blocking(async { 8 })?)
/// }
/// assert_eq!(boxed().unwrap(), 8);
/// ```
pub struct Error {
    repr: Repr,
}

enum Repr {
    Panicked {
        message: Option<Cow<'static, str>>,
        // Only `Send`; the never-locked `Mutex` makes `Error` `Sync`.
        payload: Mutex<Box<dyn Any + Send + 'static>>,
    },
    TimedOut {
        stalled_current_thread: bool,
    },
    Lost,
    Unavailable(std::io::Error),
}

// No method changes an `Error` through a shared reference, and the payload's `Mutex` is
// never locked: nothing can be seen half-updated after a panic.
impl std::panic::UnwindSafe for Error {}
impl std::panic::RefUnwindSafe for Error {}

impl Error {
    /// The error of work that panicked with `payload`: what a side that runs work hands its
    /// caller when the work unwinds (the message is the payload's, when it is a string).
    ///
    /// # Examples
    ///
    /// ```
    /// let payload = std::panic::catch_unwind(|| panic!("corrupt page")).unwrap_err();
    /// let err = bridge::Error::panicked(payload);
    /// assert!(err.is_panic());
    /// assert_eq!(err.to_string(), "the work panicked: corrupt page");
    /// ```
    pub fn panicked(payload: Box<dyn Any + Send + 'static>) -> Self {
        let message = match payload.downcast_ref::<&'static str>() {
            Some(message) => Some(Cow::Borrowed(*message)),
            None => payload.downcast_ref::<String>().cloned().map(Cow::Owned),
        };
        let payload = Mutex::new(payload);
        Self {
            repr: Repr::Panicked { message, payload },
        }
    }

    /// The error of a call whose time limit passed before its work finished.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = bridge::Error::timed_out();
    /// assert!(err.is_timeout());
    /// assert_eq!(err.to_string(), "the deadline passed before the future finished");
    /// ```
    pub fn timed_out() -> Self {
        Self {
            repr: Repr::TimedOut {
                stalled_current_thread: false,
            },
        }
    }

    /// Like [`timed_out`](Self::timed_out), for a call that blocked a current-thread runtime
    /// with tasks alive: none of them could run while it waited, so a future that needed one
    /// could not finish. The message says so and how to restructure.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = bridge::Error::timed_out_stalling_current_thread();
    /// assert!(err.is_timeout());
    /// assert!(err.to_string().contains("current-thread runtime"));
    /// ```
    pub fn timed_out_stalling_current_thread() -> Self {
        Self {
            repr: Repr::TimedOut {
                stalled_current_thread: true,
            },
        }
    }

    /// The error of work whose runner was lost before it finished (its runtime shut down,
    /// its pool dropped it unrun).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(bridge::Error::lost().is_lost());
    /// ```
    pub fn lost() -> Self {
        Self { repr: Repr::Lost }
    }

    /// The error of a call for which the operating system refused a thread or runtime;
    /// `error` is its [`source`](std::error::Error::source).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::error::Error as _;
    ///
    /// let err = bridge::Error::unavailable(std::io::Error::other("no threads"));
    /// assert!(err.to_string().contains("no threads"));
    /// assert!(err.source().is_some());
    /// ```
    pub fn unavailable(error: std::io::Error) -> Self {
        Self {
            repr: Repr::Unavailable(error),
        }
    }

    /// Whether the work panicked; [`into_panic`](Self::into_panic) gives the payload.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = bridge::spawn(|| panic!("no")).join().unwrap_err();
    /// assert!(err.is_panic());
    /// ```
    pub fn is_panic(&self) -> bool {
        matches!(self.repr, Repr::Panicked { .. })
    }

    /// Whether the time limit passed before the work finished (the work was dropped).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let slow = async { tokio::time::sleep(Duration::from_secs(60)).await };
    /// let err = bridge::try_run_blocking_timeout(slow, Duration::from_millis(5)).unwrap_err();
    /// assert!(err.is_timeout());
    /// ```
    pub fn is_timeout(&self) -> bool {
        matches!(self.repr, Repr::TimedOut { .. })
    }

    /// Whether what ran the work was lost before it finished: its runtime shut down, or its
    /// rayon pool dropped the task before it ran.
    ///
    /// # Examples
    ///
    /// ```
    /// let io = bridge::rt::IoRuntime::new(1).unwrap();
    /// let task = io.spawn(std::future::pending::<()>());
    /// drop(io);
    /// assert!(task.join().unwrap_err().is_lost());
    /// ```
    pub fn is_lost(&self) -> bool {
        matches!(self.repr, Repr::Lost)
    }

    /// The panic payload, to resume with `std::panic::resume_unwind` or to downcast.
    ///
    /// # Panics
    ///
    /// If the error is not a panic (see [`try_into_panic`](Self::try_into_panic)).
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
            Err(err) => panic!("bridge::Error::into_panic on an error that is not a panic: {err}"),
        }
    }

    /// The panic payload, or the error itself when it is not a panic.
    ///
    /// # Errors
    ///
    /// Gives the error back unchanged when it is not a panic.
    ///
    /// # Examples
    ///
    /// ```
    /// let slow = async { tokio::time::sleep(std::time::Duration::from_secs(60)).await };
    /// let limit = std::time::Duration::from_millis(1);
    /// let err = bridge::try_run_blocking_timeout(slow, limit).unwrap_err();
    /// assert!(err.try_into_panic().unwrap_err().is_timeout());
    /// ```
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send + 'static>, Self> {
        match self.repr {
            Repr::Panicked { payload, .. } => {
                Ok(payload.into_inner().unwrap_or_else(PoisonError::into_inner))
            }
            _ => Err(self),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Panicked {
                message: Some(message),
                ..
            } => f.debug_tuple("Panicked").field(message).finish(),
            Repr::Panicked { message: None, .. } => f.write_str("Panicked(..)"),
            Repr::TimedOut {
                stalled_current_thread,
            } => f
                .debug_struct("TimedOut")
                .field("stalled_current_thread", stalled_current_thread)
                .finish(),
            Repr::Lost => f.write_str("Lost"),
            Repr::Unavailable(error) => f.debug_tuple("Unavailable").field(error).finish(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Panicked {
                message: Some(message),
                ..
            } => write!(f, "the work panicked: {message}"),
            Repr::Panicked { message: None, .. } => f.write_str("the work panicked"),
            Repr::TimedOut {
                stalled_current_thread: false,
            } => f.write_str("the deadline passed before the future finished"),
            Repr::TimedOut {
                stalled_current_thread: true,
            } => f.write_str(
                "the deadline passed before the future finished, and the call was made on a \
                 current-thread runtime with tasks alive, which runs none of its tasks while its thread waits \
                 in (or for) the call: a future that needs one of them \
                 (a server spawned there, a socket created there) cannot finish. Await the \
                 future there instead of calling run_blocking, or run those tasks on another \
                 runtime (bridge::spawn_io; in a test: #[tokio::test(flavor = \"multi_thread\")])",
            ),
            Repr::Lost => f.write_str(
                "what ran the work was lost before it finished (its runtime shut down, or its \
                 rayon pool dropped the task): keep the runtime or pool alive while work may \
                 use it",
            ),
            Repr::Unavailable(error) => write!(
                f,
                "the bridge could not start a thread or runtime ({error}): raise the process's \
                 thread or file limits, or lower bridge::configure().handoff_threads",
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.repr {
            Repr::Unavailable(error) => Some(error),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn send_sync_static() {
        fn check<E: Send + Sync + 'static + std::error::Error>() {}
        check::<Error>();
    }

    #[test]
    fn panic_payload_and_message() {
        let err = Error::panicked(Box::new(String::from("boom")));
        assert!(err.is_panic() && !err.is_timeout() && !err.is_lost());
        assert_eq!(err.to_string(), "the work panicked: boom");
        assert_eq!(format!("{err:?}"), "Panicked(\"boom\")");
        let payload = err.into_panic();
        assert_eq!(payload.downcast_ref::<String>().unwrap(), "boom");
    }

    #[test]
    fn other_kinds_are_not_panics() {
        assert!(Error::lost().try_into_panic().unwrap_err().is_lost());
        assert!(Error::timed_out().is_timeout());
        let stalled = Error::timed_out_stalling_current_thread().to_string();
        assert!(stalled.contains("flavor = \"multi_thread\""), "{stalled}");
        let refused = Error::unavailable(std::io::Error::other("no threads"));
        assert!(std::error::Error::source(&refused).is_some());
        assert!(refused.to_string().contains("no threads"));
    }

    #[test]
    #[should_panic(expected = "not a panic")]
    fn into_panic_of_a_lost_task_panics() {
        let _ = Error::lost().into_panic();
    }
}
