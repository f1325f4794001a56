//! The sending half.

use super::SendError;
use super::channel::{Channel, ChannelPtr, invalid_state};
use super::states::*;
use crate::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::{RefUnwindSafe, UnwindSafe};

/// Sends one value to the paired [`Receiver`](super::Receiver).
///
/// Made by [`channel`](super::channel). Consumed by [`send`](Sender::send); dropping it
/// without sending closes the channel and wakes a waiting receiver with an error.
///
/// # Examples
///
/// ```
/// let (tx, rx) = bridge::oneshot::channel();
/// std::thread::spawn(move || tx.send(6 * 7));
/// assert_eq!(rx.recv_blocking(), Ok(42));
/// ```
pub struct Sender<T> {
    channel: ChannelPtr<T>,
    // Invariant in `T`: a `Sender<&'static str>` must not become a `Sender<&'a str>` while its
    // receiver still expects `&'static str`. Auto traits come from the impls below.
    _marker: PhantomData<fn(T) -> T>,
}

// SAFETY: the sender moves a `T` to the receiver's thread, so `T: Send` is needed and enough;
// the shared cell is only touched through atomics and the ownership rules in `states`.
unsafe impl<T: Send> Send for Sender<T> {}
// SAFETY: the only `&self` method (`is_closed`) is a single atomic load.
unsafe impl<T: Send> Sync for Sender<T> {}

// Unwind safe whatever `T`, as tokio's `JoinHandle` is: a panic cannot leave the channel
// half-updated where a handle caught by `catch_unwind` could see it. Every operation moves the
// state in single atomic steps, and the only foreign code it runs (a waker's `clone`, `wake`
// or drop, a value's drop) runs while the state is settled, before or after those steps.
// The value only moves through the channel; no `&T` is ever shared across the boundary.
impl<T> UnwindSafe for Sender<T> {}
impl<T> RefUnwindSafe for Sender<T> {}

/// How the sender's last step ended.
enum Finish {
    /// The receiver is alive and will see the value (or the close).
    Delivered,
    /// The receiver is gone: the sender is the last handle and must free the channel.
    ReceiverGone,
}

impl<T> Sender<T> {
    pub(super) fn new(channel: ChannelPtr<T>) -> Self {
        Self {
            channel,
            _marker: PhantomData,
        }
    }

    /// Sends `value`, waking the receiver if it waits.
    ///
    /// Never blocks. The send happens-before the receive that observes the value: whatever
    /// the sending thread wrote before `send` is visible to the receiving side once it has
    /// the value.
    ///
    /// # Errors
    ///
    /// If the receiver was dropped, the value comes back in [`SendError`], untouched; the
    /// channel does not drop it.
    ///
    /// # Examples
    ///
    /// ```
    /// let (tx, mut rx) = bridge::oneshot::channel();
    /// tx.send("hello").unwrap();
    /// assert_eq!(rx.try_recv(), Ok("hello"));
    /// ```
    pub fn send(self, value: T) -> Result<(), SendError<T>> {
        let this = ManuallyDrop::new(self);
        // SAFETY: the sender is alive, so the channel is allocated; before the sender
        // finishes, the value slot is the sender's alone.
        unsafe { this.channel().write_value(value) };
        match this.finish(MESSAGE) {
            Finish::Delivered => Ok(()),
            Finish::ReceiverGone => {
                // SAFETY: the receiver is gone (we acquired DISCONNECTED), so everything is
                // ours; the slot holds the value written above.
                let value = unsafe { this.channel().take_value() };
                // SAFETY: we are the last handle and do not touch the channel again.
                unsafe { Channel::free(this.channel) };
                Err(SendError(value))
            }
        }
    }

    /// Whether the receiver was dropped, so a value sent now would come straight back.
    ///
    /// A producer can poll this to skip work that nobody waits for. `false` is only a
    /// snapshot: the receiver may drop right after. A receiver that was
    /// [abandoned](super::Receiver::abandon) does not count as closed here (a send still
    /// hands the value back).
    ///
    /// # Examples
    ///
    /// ```
    /// let (tx, rx) = bridge::oneshot::channel::<()>();
    /// assert!(!tx.is_closed());
    /// drop(rx);
    /// assert!(tx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        // ORDERING: Relaxed: an advisory snapshot; no data is read on the strength of it.
        self.channel().state.load(Relaxed) == DISCONNECTED
    }

    fn channel(&self) -> &Channel<T> {
        // SAFETY: a live sender keeps the channel allocated (only the last handle frees it,
        // and the receiver cannot be last while the sender has not finished).
        unsafe { self.channel.as_ref() }
    }

    /// Moves the channel to `done` (`MESSAGE` or `DISCONNECTED`), waking the receiver if it
    /// waits. After `Delivered` the channel may already be freed: do not touch it.
    ///
    /// Inlined for its common case, a receiver that neither waits nor left: one
    /// compare-exchange from EMPTY. Everything else is in [`finish_contended`](Self::finish_contended).
    #[inline]
    fn finish(&self, done: u8) -> Finish {
        // No load first: the compare-exchange from EMPTY either succeeds or reports the actual
        // state, and it takes the cache line exclusively at once (a load would fetch it shared
        // from the receiver's core, and the compare-exchange then fetch it again).
        // ORDERING: success Release publishes the value (or our last accesses, for a close)
        // to the receiver's acquire of `done`. Failure Acquire: if it reads DISCONNECTED, the
        // receiver's last accesses must happen-before our free.
        match self
            .channel()
            .state
            .compare_exchange(EMPTY, done, Release, Acquire)
        {
            Ok(_) => Finish::Delivered,
            Err(actual) => self.finish_contended(done, actual),
        }
    }

    /// [`finish`](Self::finish) after its compare-exchange from EMPTY found `state` (read
    /// with Acquire) instead.
    #[inline(never)]
    fn finish_contended(&self, done: u8, mut state: u8) -> Finish {
        let channel = self.channel();
        loop {
            match state {
                EMPTY => {
                    // ORDERING: success Release publishes the value (or our last accesses,
                    // for a close) to the receiver's acquire of `done`. Failure Acquire: if it
                    // reads DISCONNECTED, the receiver's last accesses must happen-before our
                    // free.
                    match channel
                        .state
                        .compare_exchange(EMPTY, done, Release, Acquire)
                    {
                        Ok(_) => return Finish::Delivered,
                        Err(actual) => state = actual,
                    }
                }
                RECEIVING => {
                    // ORDERING: success Acquire pairs with the receiver's Release when it
                    // stored the waker, so reading the waker below is not a data race.
                    match channel
                        .state
                        .compare_exchange(RECEIVING, UNPARKING, Acquire, Acquire)
                    {
                        Ok(_) => {
                            // SAFETY: moving the state away from RECEIVING made the waker slot
                            // ours, and it holds the receiver's waker.
                            let waker = unsafe { channel.take_waker() };
                            // ORDERING: Release publishes the value and our read of the waker
                            // slot; the receiver may free the channel right after it.
                            channel.state.store(done, Release);
                            waker.wake();
                            return Finish::Delivered;
                        }
                        Err(actual) => state = actual,
                    }
                }
                DISCONNECTED | ABANDONED => return Finish::ReceiverGone,
                other => invalid_state(other),
            }
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if let Finish::ReceiverGone = self.finish(DISCONNECTED) {
            // SAFETY: the receiver is gone and never wrote a value, so the slots are empty
            // and we are the last handle.
            unsafe { Channel::free(self.channel) };
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender")
            .field("is_closed", &self.is_closed())
            .finish()
    }
}
