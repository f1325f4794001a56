//! A job's home: the pool it was queued on, and whether a waiter here may run it.
//!
//! A waiter on a rayon worker runs the queued job it waits for (see `job_claim.rs`), but only
//! a job of its own pool: a job run by another pool's worker would see that pool's threads
//! (`rayon::current_num_threads`, where its `par_iter` runs), its stack size and its start
//! handler's settings, none of which the spawn asked for. So a job records its pool at the
//! spawn, and a waiter on a worker of any other pool blocks, as a thread outside rayon does:
//! it is no worker of the job's pool.
//!
//! Nor does a waiter run a job while a tokio runtime is entered on its thread (a runtime's
//! `block_on` body, a user's `Handle::enter`): a job that starts a runtime of its own would
//! panic there ("Cannot start a runtime from within a runtime"), where on its pool it
//! returns its value. With the feature `tokio` this is asked of bridge-tokio's
//! [`route`](https://docs.rs/threadbridge-tokio/latest/bridge_tokio/fn.route.html): a call
//! that would be handed off (`Route::Handoff`) is inside someone's runtime. The bridge's own
//! poll loops (a `run_blocking` on a rayon worker, a future task's poll) enter only a handle
//! and stay helpable, so that a pool of one whose worker waits there still runs its work.
//! Without the feature nothing tells, and the waiter helps.
//!
//! rayon tells whether a thread belongs to a pool only through the pool's handle
//! (`ThreadPool::current_thread_index`), and a spawn through `&ThreadPool` cannot keep the
//! handle. The identity kept instead is the one rayon shows in the `Debug` output of a pool
//! and of a scope: the address of the pool's registry, which lives as long as any of its
//! threads. If a rayon release ever shows it no more, every identity reads as
//! [`PoolId::UNKNOWN`], all equal, and every worker helps as before (the two-pool tests in
//! `tests/wait.rs` then fail and say so).

#![cfg_attr(bridge_loom, allow(dead_code))]

use std::cell::Cell;
use std::fmt::{self, Write};
use std::sync::OnceLock;

/// A rayon pool's identity: the address of its registry, as rayon's `Debug` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PoolId(usize);

impl PoolId {
    /// What an identity reads as where rayon's `Debug` output shows none.
    const UNKNOWN: Self = Self(0);

    /// The pool of this thread, if it is a rayon worker. Found once per thread (a worker
    /// belongs to one pool for its life), by an empty scope on its pool.
    pub(crate) fn current() -> Option<Self> {
        rayon_core::current_thread_index()?;
        thread_local! {
            static CURRENT: Cell<Option<PoolId>> = const { Cell::new(None) };
        }
        CURRENT
            .try_with(|current| {
                current.get().unwrap_or_else(|| {
                    let id = Self::of_scope();
                    current.set(Some(id));
                    id
                })
            })
            .ok()
            .or_else(|| Some(Self::of_scope()))
    }

    /// `pool`'s identity.
    pub(crate) fn of(pool: &rayon_core::ThreadPool) -> Self {
        if pool.current_thread_index().is_some() {
            // This thread is one of the pool's: its cached identity is the pool's.
            if let Some(id) = Self::current() {
                return id;
            }
        }
        Self::parse(format_args!("{pool:?}"))
    }

    /// The pool that `rayon_core::spawn` (and `spawn_fifo`) queues on from this thread: this
    /// worker's, or the global pool.
    pub(crate) fn of_spawn() -> Self {
        Self::current().unwrap_or_else(Self::global)
    }

    /// The global pool's identity (found once, by an empty scope on a thread outside rayon).
    pub(crate) fn global() -> Self {
        static GLOBAL: OnceLock<PoolId> = OnceLock::new();
        *GLOBAL.get_or_init(|| {
            if rayon_core::current_thread_index().is_none() {
                return Self::of_scope();
            }
            // A scope made on a worker would be its own pool's.
            std::thread::scope(|s| s.spawn(Self::of_scope).join()).unwrap_or(Self::UNKNOWN)
        })
    }

    /// The identity of the pool an in-place scope made here runs on: this worker's, or the
    /// global pool off rayon.
    fn of_scope() -> Self {
        rayon_core::in_place_scope(|scope| Self::parse(format_args!("{scope:?}")))
    }

    /// The first `addr: <digits>` of a `Debug` output (a pool's `id`, a scope's `pool_id`).
    fn parse(debug: fmt::Arguments<'_>) -> Self {
        let mut finder = AddrFinder::default();
        // An error only stops the formatting once the address is read.
        let _ = finder.write_fmt(debug);
        finder.found.map_or(Self::UNKNOWN, Self)
    }
}

/// Reads the first `addr: <digits>` in what is written to it, without allocating.
#[derive(Default)]
struct AddrFinder {
    /// How much of `addr: ` the text written so far ends with.
    matched: usize,
    /// The digits read after `addr: `, if any.
    digits: Option<usize>,
    /// The address, once its digits ended.
    found: Option<usize>,
}

impl Write for AddrFinder {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        const KEY: &[u8] = b"addr: ";
        for &byte in text.as_bytes() {
            if let Some(value) = self.digits {
                match (byte as char).to_digit(10) {
                    Some(digit) => {
                        self.digits = Some(value.wrapping_mul(10).wrapping_add(digit as usize));
                        continue;
                    }
                    None => {
                        self.found = Some(value);
                        return Err(fmt::Error);
                    }
                }
            }
            if byte == KEY[self.matched] {
                self.matched += 1;
                if self.matched == KEY.len() {
                    self.digits = Some(0);
                }
            } else {
                self.matched = usize::from(byte == KEY[0]);
            }
        }
        Ok(())
    }
}

pub(crate) use imp::{Home, is_home, of, of_spawn, on_global_pool, outside_runtimes};

/// The std build: a job's home is its pool's identity.
#[cfg(not(bridge_loom))]
mod imp {
    use super::PoolId;

    /// Which waiters may claim a job: those on a worker of its pool.
    pub(crate) type Home = PoolId;

    /// The home of a job that `rayon_core::spawn` (or `spawn_fifo`) queues from this thread.
    pub(crate) fn of_spawn() -> Home {
        PoolId::of_spawn()
    }

    /// The home of a job queued on `pool`.
    pub(crate) fn of(pool: &rayon_core::ThreadPool) -> Home {
        PoolId::of(pool)
    }

    /// Whether this thread is a worker of `home`'s pool.
    pub(crate) fn is_home(home: Home) -> bool {
        PoolId::current() == Some(home)
    }

    /// Whether this thread is a worker of rayon's global pool.
    pub(crate) fn on_global_pool() -> bool {
        PoolId::current().is_some_and(|id| id == PoolId::global())
    }

    /// Whether a waiter on this thread may run a job of its pool now: no tokio runtime is
    /// entered here (see the module's docs). Asked only when there is a job to run.
    pub(crate) fn outside_runtimes() -> bool {
        #[cfg(feature = "tokio")]
        return bridge_tokio::route() != bridge_tokio::Route::Handoff;
        #[cfg(not(feature = "tokio"))]
        true
    }
}

/// The loom build: a flag. The models' threads stand for one pool's workers (`true`) or for
/// threads outside it (`false`); every one of them is a worker of "the global pool", and
/// none has a runtime entered.
#[cfg(bridge_loom)]
mod imp {
    /// See the std build's.
    pub(crate) type Home = bool;

    pub(crate) fn of_spawn() -> Home {
        true
    }

    pub(crate) fn of(_: &rayon_core::ThreadPool) -> Home {
        true
    }

    pub(crate) fn is_home(home: Home) -> bool {
        home
    }

    pub(crate) fn on_global_pool() -> bool {
        true
    }

    pub(crate) fn outside_runtimes() -> bool {
        true
    }
}

#[cfg(all(test, not(bridge_loom)))]
mod tests {
    use super::PoolId;

    #[test]
    fn the_address_is_read_from_rayons_debug_output() {
        let pool = rayon_core::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let id = PoolId::of(&pool);
        assert_ne!(id, PoolId::UNKNOWN, "no address in {pool:?}");
        assert_eq!(pool.install(PoolId::current), Some(id));
        assert_eq!(pool.install(|| PoolId::of(&pool)), id);
        assert_ne!(id, PoolId::global());
        assert_eq!(PoolId::of_spawn(), PoolId::global());
        assert_eq!(PoolId::current(), None);
    }
}
