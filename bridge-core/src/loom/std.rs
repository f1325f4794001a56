//! The production side of the shim: thin wrappers over `std`.

pub(crate) mod sync {
    pub(crate) mod atomic {
        pub(crate) use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
    }
}

pub(crate) mod hint {
    pub(crate) use std::hint::spin_loop;
}

pub(crate) mod cell {
    /// `std::cell::UnsafeCell` with loom's closure-based access API.
    #[derive(Debug)]
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        pub(crate) const fn new(value: T) -> Self {
            Self(std::cell::UnsafeCell::new(value))
        }

        #[inline(always)]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

pub(crate) mod thread {
    use super::super::Parked;
    use std::time::Instant;

    pub(crate) use std::thread::{Thread, current, park, yield_now};

    /// Parks until unparked, a spurious wake-up, or `deadline`.
    pub(crate) fn park_deadline(deadline: Instant) -> Parked {
        let now = Instant::now();
        if now >= deadline {
            return Parked::Expired;
        }
        std::thread::park_timeout(deadline - now);
        Parked::Early
    }
}

pub(crate) mod alloc {
    /// A heap value; under loom the same type also carries a leak-tracked token.
    #[derive(Debug)]
    pub(crate) struct Tracked<T> {
        pub(crate) value: T,
    }

    impl<T> std::ops::Deref for Tracked<T> {
        type Target = T;
        #[inline(always)]
        fn deref(&self) -> &T {
            &self.value
        }
    }

    /// Moves `value` to the heap and leaks it as a raw pointer.
    pub(crate) fn allocate<T>(value: T) -> std::ptr::NonNull<Tracked<T>> {
        std::ptr::NonNull::from(Box::leak(Box::new(Tracked { value })))
    }

    /// Drops and frees what [`allocate`] returned.
    ///
    /// # Safety
    ///
    /// - `ptr` came from [`allocate`] and has not been freed.
    /// - No reference to the pointee is used after this call.
    pub(crate) unsafe fn free<T>(ptr: std::ptr::NonNull<Tracked<T>>) {
        // SAFETY: per this function's contract the pointer came from `Box::leak` and is
        // unaliased, so rebuilding the box to drop it is sound.
        drop(unsafe { Box::from_raw(ptr.as_ptr()) });
    }
}

/// How many rounds a blocking receiver spins and yields before it parks.
pub(crate) const SPIN_ROUNDS: u32 = 10;
