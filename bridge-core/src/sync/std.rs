//! The production side of the shim: thin wrappers over `std`.

pub(crate) mod atomic {
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
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
    //! Heap cells, with a cache of one freed cell per size class and thread.
    //!
    //! A thread that frees a channel most often makes another one soon after (a request's
    //! reply channel, a hand-off per call), so it keeps the freed memory for its next channel
    //! of the same size class instead of returning it to the allocator: creating and dropping
    //! a channel on one thread then skips the allocator's paths both ways (the oneshot study
    //! measures it). A cell freed while the slot is taken, or during the thread's exit,
    //! goes back to the allocator. Fuzzing builds (`cfg(fuzzing)`) do not cache, so that a
    //! sanitizer sees every free.

    use std::alloc::Layout;
    use std::cell::Cell;
    use std::marker::PhantomData;
    use std::ptr::{self, NonNull};

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

    /// Cached cells are `CLASS_BYTES` times (class + 1) bytes, aligned to `CLASS_BYTES`.
    const CLASS_BYTES: usize = 16;
    /// Size classes cached: values of up to `CLASSES * CLASS_BYTES` bytes.
    const CLASSES: usize = if cfg!(fuzzing) { 0 } else { 8 };

    /// The size class of `T`'s cells, or `None` if they are not cached (too large, too
    /// aligned, or zero-sized).
    struct Class<T>(PhantomData<T>);

    impl<T> Class<T> {
        const INDEX: Option<usize> = {
            let (size, align) = (size_of::<T>(), align_of::<T>());
            if size == 0 || size > CLASSES * CLASS_BYTES || align > CLASS_BYTES {
                None
            } else {
                Some((size - 1) / CLASS_BYTES)
            }
        };
    }

    /// The layout every cell of `class` is allocated and freed with.
    fn layout(class: usize) -> Layout {
        match Layout::from_size_align((class + 1) * CLASS_BYTES, CLASS_BYTES) {
            Ok(layout) => layout,
            Err(_) => unreachable!("a size class is a small multiple of its alignment"),
        }
    }

    /// This thread's cached cells, one slot per class (null: empty).
    struct Cache([Cell<*mut u8>; CLASSES]);

    impl Drop for Cache {
        fn drop(&mut self) {
            for (class, slot) in self.0.iter().enumerate() {
                let cell = slot.replace(ptr::null_mut());
                if !cell.is_null() {
                    // SAFETY: a slot only holds memory allocated with `layout(class)` and no
                    // longer in use (see `free`); taking it out empties the slot.
                    unsafe { std::alloc::dealloc(cell, layout(class)) };
                }
            }
        }
    }

    thread_local! {
        static CACHE: Cache = const { Cache([const { Cell::new(ptr::null_mut()) }; CLASSES]) };
    }

    /// Moves `value` to the heap and leaks it as a raw pointer.
    pub(crate) fn allocate<T>(value: T) -> NonNull<Tracked<T>> {
        let Some(class) = Class::<Tracked<T>>::INDEX else {
            return NonNull::from(Box::leak(Box::new(Tracked { value })));
        };
        // During the thread's exit the cache may be gone: then the allocator serves.
        let cached = CACHE
            .try_with(|cache| cache.0[class].replace(ptr::null_mut()))
            .unwrap_or(ptr::null_mut());
        let cell = match NonNull::new(cached) {
            Some(cell) => cell,
            None => {
                let layout = layout(class);
                // SAFETY: the layout's size is not zero.
                let fresh = unsafe { std::alloc::alloc(layout) };
                NonNull::new(fresh).unwrap_or_else(|| std::alloc::handle_alloc_error(layout))
            }
        };
        let cell = cell.cast::<Tracked<T>>();
        // SAFETY: the cell is unused memory of `layout(class)`, at least as large and as
        // aligned as `Tracked<T>` (that is how `Class` picked the class).
        unsafe { cell.write(Tracked { value }) };
        cell
    }

    /// Drops and frees what [`allocate`] returned.
    ///
    /// # Safety
    ///
    /// - `ptr` came from [`allocate`] and has not been freed.
    /// - No reference to the pointee is used after this call.
    pub(crate) unsafe fn free<T>(ptr: NonNull<Tracked<T>>) {
        let Some(class) = Class::<Tracked<T>>::INDEX else {
            // SAFETY: per this function's contract the pointer came from `Box::leak` (the
            // class is a property of `T`, so `allocate` took the same branch) and is
            // unaliased, so rebuilding the box to drop it is sound.
            drop(unsafe { Box::from_raw(ptr.as_ptr()) });
            return;
        };
        // SAFETY: per this function's contract the value is live and nobody uses it again.
        unsafe { ptr::drop_in_place(ptr.as_ptr()) };
        let cell = ptr.as_ptr().cast::<u8>();
        let kept = CACHE
            .try_with(|cache| {
                let slot = &cache.0[class];
                let empty = slot.get().is_null();
                if empty {
                    slot.set(cell);
                }
                empty
            })
            .unwrap_or(false);
        if !kept {
            // SAFETY: the cell was allocated with `layout(class)` (by `allocate`, which took
            // the same class) and nothing refers to it any more.
            unsafe { std::alloc::dealloc(cell, layout(class)) };
        }
    }
}
