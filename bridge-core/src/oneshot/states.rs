//! The states of a channel. The receiver and the sender move the state with atomic
//! operations; each state says which side owns which slot.

/// Both sides alive, no value, no waker stored. The receiver owns the waker slot; the sender
/// owns the value slot.
pub(crate) const EMPTY: u8 = 0;

/// Both sides alive, no value, and the receiver's waker (a task's `Waker` or a parked
/// thread) is in the waker slot. Whichever side first moves the state away from `RECEIVING`
/// owns the waker: the receiver to replace or drop it, the sender to wake it.
pub(crate) const RECEIVING: u8 = 1;

/// The sender has taken the waker out and is about to publish `MESSAGE` or
/// `DISCONNECTED`. The receiver must not touch the channel's slots, and must not free the
/// channel, until that final store lands.
pub(crate) const UNPARKING: u8 = 2;

/// The sender has written the value and is gone. The receiver owns everything.
pub(crate) const MESSAGE: u8 = 3;

/// Exactly one side is left and owns everything: the sender dropped without sending, or the
/// receiver dropped, or the receiver already took the value. No value is in the slot. The
/// side that observes this state is the one that frees the channel.
pub(crate) const DISCONNECTED: u8 = 4;

/// The receiver was abandoned ([`Receiver::abandon`](super::Receiver::abandon)): gone
/// without telling the sender. For ownership it is `DISCONNECTED` (the sender is the last
/// handle and frees the channel); only `Sender::is_closed` reads it as open.
pub(crate) const ABANDONED: u8 = 5;

/// Only in loom builds: the channel was freed. Any operation that reads this reports a use
/// after free (real builds return the memory to the allocator instead).
#[cfg(bridge_loom)]
pub(crate) const FREED: u8 = 0xFF;
