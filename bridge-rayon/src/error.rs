//! Why a task produced no value.

use std::any::Any;
use std::fmt;

/// Why a [`Task`](crate::Task) produced no value. Returned by the non-panicking forms,
/// [`Task::join`](crate::Task::join) and [`Task::catch_unwind`](crate::Task::catch_unwind).
///
/// # Examples
///
/// ```
/// let task = bridge_rayon::spawn(|| -> u8 { panic!("bad block") });
/// let err = task.join().unwrap_err();
/// assert!(err.is_panic());
/// assert_eq!(err.to_string(), "the task panicked: bad block");
/// ```
pub enum TaskError {
    /// The closure panicked; this is the payload, as `std::panic::catch_unwind` gives it.
    Panicked(Box<dyn Any + Send + 'static>),
    /// The job was dropped before it ran, without being cancelled through its `Task`: its
    /// pool dropped it. rayon runs every job it accepted, so this is not expected to happen.
    Lost,
}

impl TaskError {
    /// Whether the closure panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = bridge_rayon::spawn(|| -> () { panic!() }).join().unwrap_err();
    /// assert!(err.is_panic());
    /// ```
    pub fn is_panic(&self) -> bool {
        matches!(self, Self::Panicked(_))
    }

    /// The panic payload, or the error itself if the closure did not panic.
    ///
    /// # Errors
    ///
    /// Gives `self` back if it is not a panic.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = bridge_rayon::spawn(|| -> () { std::panic::panic_any(7u32) }).join().unwrap_err();
    /// let payload = err.try_into_panic().unwrap();
    /// assert_eq!(payload.downcast_ref::<u32>(), Some(&7));
    /// ```
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send + 'static>, TaskError> {
        match self {
            Self::Panicked(payload) => Ok(payload),
            other => Err(other),
        }
    }

    /// The panic message, if the payload is a string (as `panic!` with a message makes it).
    fn message(&self) -> Option<&str> {
        match self {
            Self::Panicked(payload) => payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str)),
            Self::Lost => None,
        }
    }
}

impl fmt::Debug for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Panicked(_) => match self.message() {
                Some(message) => f.debug_tuple("Panicked").field(&message).finish(),
                None => f.write_str("Panicked(..)"),
            },
            Self::Lost => f.write_str("Lost"),
        }
    }
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Panicked(_) => match self.message() {
                Some(message) => write!(f, "the task panicked: {message}"),
                None => f.write_str("the task panicked"),
            },
            Self::Lost => f.write_str(
                "the task's job was dropped by its thread pool before it ran; \
                 nothing was computed",
            ),
        }
    }
}

impl std::error::Error for TaskError {}
