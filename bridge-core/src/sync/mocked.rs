//! The loom side of the shim, compiled only with `--cfg bridge_loom`.

pub(crate) mod atomic {
    pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU8, Ordering};
}

pub(crate) mod cell {
    pub(crate) use loom::cell::UnsafeCell;
}

pub(crate) mod thread {
    use super::super::Parked;
    use std::time::Instant;

    pub(crate) use loom::thread::{Thread, current, park, yield_now};

    /// loom has no clock. A timed park yields once (so the other side may run, wake us or
    /// not) and then reports the deadline as passed, which makes every model that times
    /// out explore both "the value came in time" and "the timeout won the race".
    pub(crate) fn park_deadline(_deadline: Instant) -> Parked {
        loom::thread::yield_now();
        Parked::Expired
    }
}

pub(crate) mod alloc {
    use loom::alloc::Layout;

    /// Heap allocation with loom's leak tracking.
    ///
    /// The value itself lives in a plain `Box` that [`free`] never returns to the allocator:
    /// instead `free` releases a one-byte loom allocation (so a channel that is never freed
    /// fails the model as a leak) and the caller poisons its state first (so a use after
    /// free reads the poison and panics, where a real free would be silent undefined
    /// behaviour that loom cannot see).
    pub(crate) fn allocate<T>(value: T) -> std::ptr::NonNull<Tracked<T>> {
        // SAFETY: the layout has a non-zero size.
        let token = unsafe { loom::alloc::alloc(Layout::new::<u8>()) };
        std::ptr::NonNull::from(Box::leak(Box::new(Tracked { value, token })))
    }

    /// A value with the loom allocation that stands for it.
    #[derive(Debug)]
    pub(crate) struct Tracked<T> {
        pub(crate) value: T,
        token: *mut u8,
    }

    impl<T> std::ops::Deref for Tracked<T> {
        type Target = T;
        fn deref(&self) -> &T {
            &self.value
        }
    }

    /// Releases the loom token of what [`allocate`] returned (see there).
    ///
    /// # Safety
    ///
    /// - `ptr` came from [`allocate`] and has not been freed.
    pub(crate) unsafe fn free<T>(ptr: std::ptr::NonNull<Tracked<T>>) {
        // SAFETY: per the contract `ptr` is live.
        let token = unsafe { ptr.as_ref() }.token;
        // SAFETY: the token was allocated in `allocate` with this layout, and only once freed.
        unsafe { loom::alloc::dealloc(token, Layout::new::<u8>()) };
    }
}
