//! Why a task produced no value.

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::sync::{Mutex, PoisonError};

/// Why a [`Task`](crate::Task) produced no value. Returned by the non-panicking forms,
/// [`Task::join`](crate::Task::join) and [`Task::catch_unwind`](crate::Task::catch_unwind).
///
/// Either the closure panicked ([`is_panic`](Self::is_panic); the payload comes out with
/// [`into_panic`](Self::into_panic)), or the job was lost ([`is_lost`](Self::is_lost)): it
/// was dropped before it finished, without being cancelled through its `Task`, so nothing
/// was computed. rayon runs every job it accepted, so a lost job is not expected; it would
/// mean the pool dropped it (a loom model that plays the pool does), or, for
/// [`join`](crate::Task::join), that the value was already taken through this task (by a
/// poll, [`try_get`](crate::Task::try_get) or a timed wait). A [`CatchUnwind`](crate::CatchUnwind)
/// polled again after it completed panics instead, as the `Task` does.
///
/// A `TaskError` is `Send + Sync + 'static` (the payload, which is only `Send`, sits in a
/// `Mutex` that is never locked: only [`into_panic`](Self::into_panic) takes it, by value), so
/// `?` turns it into `Box<dyn std::error::Error + Send + Sync>` or `anyhow::Error`. To go
/// on with the panic instead, pass the payload to `std::panic::resume_unwind`, or take the
/// result with [`Task::wait`](crate::Task::wait) or `.await`, which do that for you.
///
/// # Examples
///
/// ```
/// let task = bridge::spawn(|| -> u8 { panic!("bad block") });
/// let err = task.join().unwrap_err();
/// assert!(err.is_panic());
/// assert_eq!(err.to_string(), "the task panicked: bad block");
/// ```
///
/// `?` into the usual boxed errors:
///
/// ```
/// fn checksum(block: Vec<u8>) -> Result<u64, Box<dyn std::error::Error + Send + Sync>> {
///     let sum = bridge::spawn(move || block.iter().map(|&b| u64::from(b)).sum()).join()?;
///     Ok(sum)
/// }
///
/// fn checked(block: Vec<u8>) -> anyhow::Result<u64> {
///     let sum = bridge::spawn(move || -> u64 { assert!(!block.is_empty()); 1 }).join()?;
///     Ok(sum)
/// }
///
/// assert_eq!(checksum(vec![1, 2, 3]).unwrap(), 6);
/// let err = checked(Vec::new()).unwrap_err();
/// assert!(err.downcast_ref::<bridge::TaskError>().unwrap().is_panic());
/// ```
pub struct TaskError {
    repr: Repr,
}

enum Repr {
    /// The closure panicked.
    Panicked {
        /// The payload's message, if it is a string (as `panic!` makes it), copied out when
        /// the error is made so that `Display` and `Debug` never touch the payload.
        message: Option<Cow<'static, str>>,
        /// The payload. In a `Mutex` only to make the error `Sync` (the payload is `Send`,
        /// not `Sync`): it is never locked, only taken out by value (`into_inner`), so a
        /// shared `TaskError` gives no access to it at all.
        payload: Mutex<Box<dyn Any + Send + 'static>>,
    },
    /// The job was dropped before it finished.
    Lost,
}

impl TaskError {
    /// The error for a closure that panicked with `payload`.
    pub(crate) fn panicked(payload: Box<dyn Any + Send + 'static>) -> Self {
        let message = match payload.downcast_ref::<&'static str>() {
            Some(message) => Some(Cow::Borrowed(*message)),
            None => payload.downcast_ref::<String>().cloned().map(Cow::Owned),
        };
        Self {
            repr: Repr::Panicked {
                message,
                payload: Mutex::new(payload),
            },
        }
    }

    /// The error for a job dropped before it finished.
    pub(crate) fn lost() -> Self {
        Self { repr: Repr::Lost }
    }

    /// Whether the closure panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = bridge::spawn(|| -> () { panic!() }).join().unwrap_err();
    /// assert!(err.is_panic());
    /// ```
    pub fn is_panic(&self) -> bool {
        matches!(self.repr, Repr::Panicked { .. })
    }

    /// Whether the job was lost: dropped before it finished, with nothing computed (see
    /// [`TaskError`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let err = bridge::spawn(|| -> () { panic!() }).join().unwrap_err();
    /// assert!(!err.is_lost());
    /// ```
    pub fn is_lost(&self) -> bool {
        matches!(self.repr, Repr::Lost)
    }

    /// The panic payload, as `std::panic::catch_unwind` gives it.
    ///
    /// # Panics
    ///
    /// Panics if the closure did not panic (the job was lost); use
    /// [`try_into_panic`](Self::try_into_panic) when that can happen.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = bridge::spawn(|| -> () { std::panic::panic_any(7u32) }).join().unwrap_err();
    /// assert_eq!(*err.into_panic().downcast::<u32>().unwrap(), 7);
    /// ```
    #[track_caller]
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        match self.try_into_panic() {
            Ok(payload) => payload,
            Err(err) => panic!("TaskError::into_panic on an error that is not a panic: {err}"),
        }
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
    /// let err = bridge::spawn(|| -> () { std::panic::panic_any(7u32) }).join().unwrap_err();
    /// let payload = err.try_into_panic().unwrap();
    /// assert_eq!(payload.downcast_ref::<u32>(), Some(&7));
    /// ```
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send + 'static>, TaskError> {
        match self.repr {
            // Never poisoned: it is never locked.
            Repr::Panicked { payload, .. } => {
                Ok(payload.into_inner().unwrap_or_else(PoisonError::into_inner))
            }
            Repr::Lost => Err(self),
        }
    }
}

impl fmt::Debug for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Panicked {
                message: Some(message),
                ..
            } => f.debug_tuple("Panicked").field(message).finish(),
            Repr::Panicked { message: None, .. } => f.write_str("Panicked(..)"),
            Repr::Lost => f.write_str("Lost"),
        }
    }
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Panicked {
                message: Some(message),
                ..
            } => write!(f, "the task panicked: {message}"),
            Repr::Panicked { message: None, .. } => f.write_str("the task panicked"),
            Repr::Lost => f.write_str("the task's job was dropped before it finished"),
        }
    }
}

impl std::error::Error for TaskError {}

#[cfg(test)]
mod tests {
    use super::TaskError;

    #[test]
    fn lost_is_not_a_panic_and_says_so() {
        let err = TaskError::lost();
        assert!(err.is_lost() && !err.is_panic());
        assert_eq!(
            err.to_string(),
            "the task's job was dropped before it finished"
        );
        assert_eq!(format!("{err:?}"), "Lost");
        let err = err.try_into_panic().unwrap_err();
        assert!(err.is_lost());
    }

    #[test]
    #[should_panic = "TaskError::into_panic on an error that is not a panic"]
    fn into_panic_of_a_lost_job_panics() {
        let _ = TaskError::lost().into_panic();
    }

    #[test]
    fn a_panic_that_is_not_a_string_shows_no_message() {
        let err = TaskError::panicked(Box::new(3u8));
        assert!(err.is_panic() && !err.is_lost());
        assert_eq!(err.to_string(), "the task panicked");
        assert_eq!(format!("{err:?}"), "Panicked(..)");
        assert_eq!(*err.into_panic().downcast::<u8>().unwrap(), 3);
    }
}
