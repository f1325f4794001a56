//! A oneshot channel: one value, one sender, one receiver that answers to sync, blocking and
//! async receives alike.
//!
//! # Synchronization
//!
//! The send happens-before the receive that observes it: everything the sending thread wrote
//! before [`Sender::send`] is visible to whoever gets the value from the [`Receiver`]
//! (through `.await`, [`Receiver::try_recv`], [`Receiver::recv_blocking`] or a timed
//! receive). Likewise a dropped sender's writes happen-before the receiver's observation of
//! the close.
//!
//! # Costs
//!
//! At most one heap allocation per channel, and no locks: the thread that frees a channel
//! keeps its memory for the next channel of a similar size that it makes, so a thread that
//! makes one channel after another (a reply per request) allocates once. `send` never
//! blocks. A blocking receive spins briefly when that can pay, then parks its thread.
//!
//! # Examples
//!
//! ```
//! use bridge::oneshot;
//!
//! let (tx, rx) = oneshot::channel();
//! std::thread::spawn(move || tx.send(2 + 2).unwrap());
//! assert_eq!(rx.recv_blocking(), Ok(4));
//! ```

// Maintainer notes. `states.rs` says which side owns which slot in each state. The rules
// that the loom models (tests/loom.rs) check:
// - Only the sender writes MESSAGE and UNPARKING; only the receiver writes RECEIVING and
//   moves RECEIVING -> EMPTY. Both may write DISCONNECTED.
// - The side that reads DISCONNECTED (or the receiver that reads MESSAGE) is the last
//   handle, and the only one that frees.
// - After its final store (MESSAGE or DISCONNECTED) the sender does not touch the channel:
//   it wakes from a copy of the waker on its own stack.

mod channel;
mod errors;
mod receiver;
mod sender;
mod states;

pub use errors::{RecvError, RecvTimeoutError, SendError, TryRecvError};
pub use receiver::Receiver;
pub use sender::Sender;

/// Creates a oneshot channel: one heap cell, shared by the two halves (taken from the
/// thread's kept cell when it has one, see [Costs](self#costs)).
///
/// # Examples
///
/// ```
/// let (tx, rx) = bridge::oneshot::channel::<u64>();
/// tx.send(1).unwrap();
/// assert_eq!(bridge::block_on(rx), Ok(1));
/// ```
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let channel = channel::Channel::allocate();
    (Sender::new(channel), Receiver::new(channel))
}
