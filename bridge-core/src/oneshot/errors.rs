//! The errors of the oneshot channel.

use std::fmt;

/// The value could not be sent because the [`Receiver`](super::Receiver) was dropped.
///
/// The value comes back inside, untouched: the channel never drops a value that a failed
/// send returns.
///
/// # Examples
///
/// ```
/// let (tx, rx) = bridge::oneshot::channel();
/// drop(rx);
/// let err = tx.send(String::from("nobody listens")).unwrap_err();
/// assert_eq!(err.into_inner(), "nobody listens");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct SendError<T>(pub T);

impl<T> SendError<T> {
    /// Returns the value that could not be sent.
    ///
    /// # Examples
    ///
    /// ```
    /// let (tx, rx) = bridge::oneshot::channel();
    /// drop(rx);
    /// assert_eq!(tx.send(7).unwrap_err().into_inner(), 7);
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError(..)")
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("oneshot send failed: the receiver was dropped, so the value was handed back")
    }
}

impl<T> std::error::Error for SendError<T> {}

/// The channel closed without a value: the [`Sender`](super::Sender) was dropped without
/// sending, or the value was already received.
///
/// # Examples
///
/// ```
/// use bridge::oneshot::{self, RecvError};
///
/// let (tx, rx) = oneshot::channel::<u32>();
/// drop(tx);
/// assert_eq!(rx.recv_blocking(), Err(RecvError));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecvError;

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "oneshot receive failed: the sender was dropped without sending, \
             or the value was already received",
        )
    }
}

impl std::error::Error for RecvError {}

/// Why [`Receiver::try_recv`](super::Receiver::try_recv) returned no value.
///
/// # Examples
///
/// ```
/// use bridge::oneshot::{self, TryRecvError};
///
/// let (tx, mut rx) = oneshot::channel::<u32>();
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
/// drop(tx);
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TryRecvError {
    /// No value yet, but the sender is still alive and may send one.
    Empty,
    /// No value will ever come: the sender was dropped without sending, or the value was
    /// already received.
    Closed,
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("oneshot channel is empty: no value has been sent yet"),
            Self::Closed => RecvError.fmt(f),
        }
    }
}

impl std::error::Error for TryRecvError {}

impl From<RecvError> for TryRecvError {
    fn from(_: RecvError) -> Self {
        Self::Closed
    }
}

/// Why [`Receiver::recv_timeout`](super::Receiver::recv_timeout) or
/// [`Receiver::recv_deadline`](super::Receiver::recv_deadline) returned no value.
///
/// After a `Timeout` the receiver is still usable: wait again, poll it, or drop it.
///
/// # Examples
///
/// ```
/// use bridge::oneshot::{self, RecvTimeoutError};
/// use std::time::Duration;
///
/// let (tx, mut rx) = oneshot::channel::<u32>();
/// assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Err(RecvTimeoutError::Timeout));
/// tx.send(3).unwrap();
/// assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Ok(3));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecvTimeoutError {
    /// The time ran out before a value came; the sender may still send one.
    Timeout,
    /// No value will ever come: the sender was dropped without sending, or the value was
    /// already received.
    Closed,
}

impl fmt::Display for RecvTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Timeout => {
                f.write_str("oneshot receive timed out: no value yet; the receiver can wait again")
            }
            Self::Closed => RecvError.fmt(f),
        }
    }
}

impl std::error::Error for RecvTimeoutError {}

impl From<RecvError> for RecvTimeoutError {
    fn from(_: RecvError) -> Self {
        Self::Closed
    }
}
