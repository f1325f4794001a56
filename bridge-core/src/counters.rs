//! Event counters for the metrics of the bridge crates, sharded by thread so that counting
//! never contends.
//!
//! bridge-rayon and bridge-tokio count their metrics with them. A crate
//! declares one [`Counters`] for its set of `N` counters and one thread-local [`Local`] that
//! holds the calling thread's shard of it:
//!
//! ```
//! use bridge_core::counters::{Counters, Local};
//!
//! const SPAWNED: usize = 0;
//! const FINISHED: usize = 1;
//!
//! static COUNTERS: Counters<2> = Counters::new();
//! thread_local! {
//!     static SHARD: Local<2> = Local::new(&COUNTERS);
//! }
//!
//! COUNTERS.add(&SHARD, SPAWNED, 1);
//! std::thread::spawn(|| COUNTERS.add(&SHARD, FINISHED, 1)).join().unwrap();
//! assert_eq!(COUNTERS.snapshot(), [1, 1]);
//! ```
//!
//! **Counting** touches only the calling thread's shard: a relaxed load and a relaxed store
//! of one of its own atomics, on a cache line no other thread writes. The shard is made and
//! registered in the set's list at the thread's first count (the thread-local's
//! initializer), the one step that takes a lock.
//!
//! **At thread exit** the thread-local's destructor adds the shard's counts to the set's
//! retired totals and takes the shard off the list, under the list's lock: the list holds
//! only threads that are alive, however many come and go (handoff workers, `spawn_blocking`
//! threads). A count made after that, or whenever the thread-local cannot be reached (in
//! another thread-local's destructor at thread exit), goes straight to the retired totals
//! with a relaxed `fetch_add`: nothing is lost.
//!
//! **A snapshot** takes the list's lock and sums the retired totals and every live shard.
//! The lock keeps it consistent with retirement (a thread's counts are in its shard or in
//! the totals, never both or neither), but not with counting: the shards are read one after
//! the other while their threads go on counting, so two counters of one snapshot may come
//! from different moments. A snapshot may see a task's start, counted on the thread that ran
//! it, without its spawn, counted on another thread whose shard was read first; whatever is
//! derived as a difference must saturate at 0. What happened-before the snapshot (a count
//! sequenced before a send whose value this thread received, say) is always in it.
//!
//! The counters are statistics, not synchronization: they stay std atomics under
//! `--cfg bridge_loom`, outside the models, and wrap at `u64::MAX`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::LocalKey;

/// A set of `N` counters: the shards of the threads alive that have counted, and the totals
/// of the threads gone.
///
/// # Examples
///
/// See the [module's](self).
#[derive(Debug)]
pub struct Counters<const N: usize> {
    /// The live threads' shards, in no order.
    shards: Mutex<Vec<Arc<Shard<N>>>>,
    /// The counts of the threads that have exited, and those made without a shard.
    retired: [AtomicU64; N],
}

/// One thread's counts: written only by its thread, read by snapshots. Aligned to 128 bytes
/// (two cache lines, for the adjacent-line prefetch of x86) so that no two threads' shards
/// share a line.
#[derive(Debug)]
#[repr(align(128))]
struct Shard<const N: usize>([AtomicU64; N]);

/// A thread's handle on its shard of a [`Counters`]: the value of the crate's thread-local.
///
/// # Examples
///
/// ```
/// use bridge_core::counters::{Counters, Local};
///
/// static COUNTERS: Counters<1> = Counters::new();
/// thread_local! {
///     static SHARD: Local<1> = Local::new(&COUNTERS);
/// }
///
/// std::thread::spawn(|| COUNTERS.add(&SHARD, 0, 3)).join().unwrap();
/// // The thread has exited: its shard left the list, its count is in the retired totals.
/// assert_eq!(COUNTERS.live_shards(), 0);
/// assert_eq!(COUNTERS.snapshot(), [3]);
/// ```
#[derive(Debug)]
pub struct Local<const N: usize> {
    counters: &'static Counters<N>,
    shard: Arc<Shard<N>>,
}

impl<const N: usize> Counters<N> {
    /// A set of `N` counters, all zero.
    ///
    /// # Examples
    ///
    /// ```
    /// static COUNTERS: bridge_core::counters::Counters<4> =
    ///     bridge_core::counters::Counters::new();
    /// assert_eq!(COUNTERS.snapshot(), [0; 4]);
    /// ```
    pub const fn new() -> Self {
        Self {
            shards: Mutex::new(Vec::new()),
            retired: [const { AtomicU64::new(0) }; N],
        }
    }

    /// Adds `n` to counter `counter` (an index below `N`) in the calling thread's shard,
    /// which `local` (the thread-local of [`Local::new(self)`](Local::new)) holds. Returns
    /// the count of this counter in this thread's shard before the add: how many this thread
    /// counted since its shard was made, for sampling one event in so many. That is `0` for a
    /// count made without a shard (the thread-local gone at thread exit), which goes to the
    /// retired totals.
    ///
    /// # Panics
    ///
    /// If `counter >= N`.
    ///
    /// # Examples
    ///
    /// ```
    /// use bridge_core::counters::{Counters, Local};
    ///
    /// static COUNTERS: Counters<1> = Counters::new();
    /// thread_local! {
    ///     static SHARD: Local<1> = Local::new(&COUNTERS);
    /// }
    ///
    /// assert_eq!(COUNTERS.add(&SHARD, 0, 1), 0);
    /// assert_eq!(COUNTERS.add(&SHARD, 0, 1), 1);
    /// assert_eq!(COUNTERS.snapshot(), [2]);
    /// ```
    #[inline]
    pub fn add(&'static self, local: &'static LocalKey<Local<N>>, counter: usize, n: u64) -> u64 {
        match local.try_with(|local| {
            debug_assert!(
                std::ptr::eq(local.counters, self),
                "a thread-local of another set of counters"
            );
            local.add(counter, n)
        }) {
            Ok(before) => before,
            Err(_) => {
                // ORDERING: Relaxed: a statistic; nothing is read on its strength. Other
                // threads add here too (exiting threads, other counts without a shard), so
                // it must be a read-modify-write.
                self.retired[counter].fetch_add(n, Relaxed);
                0
            }
        }
    }

    /// The sum of every thread's counts, counter by counter (see the module docs for what a
    /// snapshot taken while threads count may see).
    ///
    /// # Examples
    ///
    /// ```
    /// use bridge_core::counters::{Counters, Local};
    ///
    /// static COUNTERS: Counters<2> = Counters::new();
    /// thread_local! {
    ///     static SHARD: Local<2> = Local::new(&COUNTERS);
    /// }
    ///
    /// COUNTERS.add(&SHARD, 1, 5);
    /// assert_eq!(COUNTERS.snapshot(), [0, 5]);
    /// ```
    pub fn snapshot(&self) -> [u64; N] {
        let shards = self.lock();
        // ORDERING: Relaxed: the retired totals change under this lock (a thread's exit)
        // or by single atomic adds of counts that were never in a shard, so reading them
        // under the lock counts every exited thread exactly once.
        let mut sums = std::array::from_fn(|i| self.retired[i].load(Relaxed));
        for shard in shards.iter() {
            for (sum, count) in sums.iter_mut().zip(&shard.0) {
                // ORDERING: Relaxed: a statistic. The shard's thread writes it meanwhile;
                // whatever it counted before something that happened-before this read
                // is seen (coherence), anything later may or may not be.
                *sum = u64::wrapping_add(*sum, count.load(Relaxed));
            }
        }
        sums
    }

    /// How many threads hold a shard now: those alive that have counted.
    ///
    /// # Examples
    ///
    /// ```
    /// use bridge_core::counters::{Counters, Local};
    ///
    /// static COUNTERS: Counters<1> = Counters::new();
    /// thread_local! {
    ///     static SHARD: Local<1> = Local::new(&COUNTERS);
    /// }
    ///
    /// assert_eq!(COUNTERS.live_shards(), 0);
    /// COUNTERS.add(&SHARD, 0, 1);
    /// assert_eq!(COUNTERS.live_shards(), 1);
    /// ```
    pub fn live_shards(&self) -> usize {
        self.lock().len()
    }

    /// The list of shards. No code but this module's runs under the lock, and none of it
    /// panics, so a poisoned lock (impossible) is used as is.
    fn lock(&self) -> MutexGuard<'_, Vec<Arc<Shard<N>>>> {
        self.shards.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<const N: usize> Default for Counters<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Local<N> {
    /// The calling thread's shard of `counters`, made zero and registered in its list: the
    /// initializer of the crate's thread-local, so that a thread's first count registers it.
    ///
    /// # Examples
    ///
    /// ```
    /// use bridge_core::counters::{Counters, Local};
    ///
    /// static COUNTERS: Counters<1> = Counters::new();
    /// thread_local! {
    ///     static SHARD: Local<1> = Local::new(&COUNTERS);
    /// }
    /// # COUNTERS.add(&SHARD, 0, 1);
    /// ```
    pub fn new(counters: &'static Counters<N>) -> Self {
        let shard = Arc::new(Shard([const { AtomicU64::new(0) }; N]));
        counters.lock().push(Arc::clone(&shard));
        Self { counters, shard }
    }

    /// Adds `n` to `counter` in this thread's shard; returns the count before.
    #[inline]
    fn add(&self, counter: usize, n: u64) -> u64 {
        let count = &self.shard.0[counter];
        // ORDERING: Relaxed: only this thread writes its shard (the `Local` lives in its
        // thread-local; snapshots only read), so a load and a store lose no update and
        // spare the locked read-modify-write. A snapshot reads either value, both right at
        // some moment. Nothing else is read on the strength of a count.
        let before = count.load(Relaxed);
        // ORDERING: Relaxed: see the load.
        count.store(before.wrapping_add(n), Relaxed);
        before
    }
}

impl<const N: usize> Drop for Local<N> {
    /// Thread exit: the shard's counts go to the retired totals and the shard leaves the
    /// list, in one critical section, so that a snapshot sees them in exactly one place.
    fn drop(&mut self) {
        let mut shards = self.counters.lock();
        for (total, count) in self.counters.retired.iter().zip(&self.shard.0) {
            // ORDERING: Relaxed: `count` is this thread's own write; the total is read by
            // snapshots under the lock held here, which orders them before or after this
            // whole move. A read-modify-write, since counts without a shard add to the
            // totals without the lock.
            total.fetch_add(count.load(Relaxed), Relaxed);
        }
        if let Some(position) = shards.iter().position(|s| Arc::ptr_eq(s, &self.shard)) {
            shards.swap_remove(position);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Counters, Local};
    use std::sync::{Arc, Barrier};

    #[test]
    fn counts_of_exited_threads_are_kept_and_their_shards_dropped() {
        static COUNTERS: Counters<2> = Counters::new();
        thread_local! {
            static SHARD: Local<2> = Local::new(&COUNTERS);
        }

        // Eight threads count at once, so that all eight shards are live together. (Joined,
        // not scoped: a scope ends when the closures return, before the threads' exit runs
        // their thread-local destructors.)
        let barrier = Arc::new(Barrier::new(8));
        let threads: Vec<_> = (0..8u64)
            .map(|i| {
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        COUNTERS.add(&SHARD, 0, 1);
                    }
                    COUNTERS.add(&SHARD, 1, i);
                    barrier.wait();
                    assert_eq!(COUNTERS.live_shards(), 8);
                    // Nobody exits before every thread has looked.
                    barrier.wait();
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(COUNTERS.live_shards(), 0);
        assert_eq!(COUNTERS.snapshot(), [8000, 28]);
        // A live shard and the retired totals add up.
        assert_eq!(COUNTERS.add(&SHARD, 0, 2), 0);
        assert_eq!(COUNTERS.snapshot(), [8002, 28]);
        assert_eq!(COUNTERS.live_shards(), 1);
    }

    #[test]
    fn a_count_from_a_thread_local_destructor_reaches_the_totals() {
        static COUNTERS: Counters<1> = Counters::new();
        thread_local! {
            static SHARD: Local<1> = Local::new(&COUNTERS);
        }

        /// Counts when the thread exits, from a thread-local destructor that may run before
        /// or after the shard's own.
        struct CountOnExit;
        impl Drop for CountOnExit {
            fn drop(&mut self) {
                COUNTERS.add(&SHARD, 0, 1);
            }
        }
        thread_local! {
            static ON_EXIT: CountOnExit = const { CountOnExit };
        }

        std::thread::spawn(|| {
            COUNTERS.add(&SHARD, 0, 1);
            ON_EXIT.with(|_| ());
        })
        .join()
        .unwrap();
        assert_eq!(COUNTERS.snapshot(), [2]);
        assert_eq!(COUNTERS.live_shards(), 0);
    }
}
