//! The heap cell that a `Sender` and a `Receiver` share: one per channel (see `loom::alloc`
//! for where the memory comes from).

use super::states::*;
use crate::sync::alloc::{self, Tracked};
use crate::sync::atomic::AtomicU8;
use crate::sync::cell::UnsafeCell;
use crate::sync::thread::Thread;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::task::Waker;

/// What the sender wakes: a task or a parked thread.
#[derive(Debug)]
pub(crate) enum ReceiverWaker {
    Task(Waker),
    Thread(Thread),
}

impl ReceiverWaker {
    pub(crate) fn wake(self) {
        match self {
            Self::Task(waker) => waker.wake(),
            Self::Thread(thread) => thread.unpark(),
        }
    }
}

pub(crate) struct Channel<T> {
    pub(crate) state: AtomicU8,
    /// Written by the sender before it publishes `MESSAGE`; read by the receiver after it
    /// observes `MESSAGE`, or by the sender after it observes `DISCONNECTED` (to hand the
    /// value back).
    value: UnsafeCell<MaybeUninit<T>>,
    /// Initialized exactly while the state is `RECEIVING` (and, for the side that moved the
    /// state away from `RECEIVING`, until it takes the waker out).
    waker: UnsafeCell<MaybeUninit<ReceiverWaker>>,
}

/// The pointer both handles hold.
pub(crate) type ChannelPtr<T> = NonNull<Tracked<Channel<T>>>;

impl<T> Channel<T> {
    pub(crate) fn allocate() -> ChannelPtr<T> {
        alloc::allocate(Channel {
            state: AtomicU8::new(EMPTY),
            value: UnsafeCell::new(MaybeUninit::uninit()),
            waker: UnsafeCell::new(MaybeUninit::uninit()),
        })
    }

    /// Frees the channel. Its slots must already be empty.
    ///
    /// # Safety
    ///
    /// - The caller is the last handle: it observed `MESSAGE` (receiver) or `DISCONNECTED`
    ///   (either side) with acquire ordering, or took the value out after that.
    /// - Nobody touches the channel after this call.
    pub(crate) unsafe fn free(ptr: ChannelPtr<T>) {
        #[cfg(bridge_loom)]
        {
            // SAFETY: the caller is the last handle, so the channel is still allocated.
            let channel = unsafe { ptr.as_ref() };
            // ORDERING: Relaxed: this is a diagnostic poison, not a publication. A second
            // free, or an access after this one by the other side, reads FREED and panics.
            let previous = channel
                .state
                .swap(FREED, crate::sync::atomic::Ordering::Relaxed);
            assert!(previous != FREED, "oneshot channel freed twice");
        }
        // SAFETY: forwarded from this function's contract.
        unsafe { alloc::free(ptr) };
    }

    /// # Safety
    ///
    /// The caller owns the value slot, and the slot is empty.
    pub(crate) unsafe fn write_value(&self, value: T) {
        // SAFETY: forwarded from this function's contract: no other access is live.
        self.value
            .with_mut(|slot| unsafe { slot.write(MaybeUninit::new(value)) });
    }

    /// # Safety
    ///
    /// The caller owns the value slot, and the slot holds a value. It is empty afterwards.
    pub(crate) unsafe fn take_value(&self) -> T {
        // SAFETY: forwarded from this function's contract: no other access is live.
        let slot = self.value.with_mut(|slot| unsafe { slot.read() });
        // SAFETY: forwarded from this function's contract: the slot was initialized.
        unsafe { slot.assume_init() }
    }

    /// # Safety
    ///
    /// The caller owns the waker slot, and the slot is empty.
    pub(crate) unsafe fn write_waker(&self, waker: ReceiverWaker) {
        // SAFETY: forwarded from this function's contract: no other access is live.
        self.waker
            .with_mut(|slot| unsafe { slot.write(MaybeUninit::new(waker)) });
    }

    /// # Safety
    ///
    /// The caller owns the waker slot, and the slot holds a waker. It is empty afterwards.
    pub(crate) unsafe fn take_waker(&self) -> ReceiverWaker {
        // SAFETY: forwarded from this function's contract: no other access is live.
        let slot = self.waker.with_mut(|slot| unsafe { slot.read() });
        // SAFETY: forwarded from this function's contract: the slot was initialized.
        unsafe { slot.assume_init() }
    }
}

/// The loud end of a broken invariant. Reaching it means a bug in this module (or, in loom
/// builds, a use after free), never a misuse by the caller.
#[cold]
#[track_caller]
pub(crate) fn invalid_state(state: u8) -> ! {
    #[cfg(bridge_loom)]
    if state == FREED {
        panic!("oneshot channel used after it was freed");
    }
    panic!("oneshot channel in an impossible state {state}: this is a bug in bridge-core")
}
