//! The arms of bridge-rayon's state machines (a job's claim, a limit's queue, a future
//! task's polls), for the coverage count (see `bridge_core::__coverage`).
//! `.ci/loom-coverage` fails on every arm here that no loom model reached.

#[cfg(any(bridge_loom, bridge_coverage))]
use bridge_core::__coverage::Decl;

/// Every arm of the claim (`job_claim.rs`), of a limit (`limit.rs`) and of a future task
/// (`future_task.rs`).
#[cfg(any(bridge_loom, bridge_coverage))]
pub const ARMS: &[Decl] = &[
    // A waiter (`wait`, `join`, a poll): off rayon it blocks (under loom, the waiter of a
    // `loom_task`), on a worker it claims the job or finds the pool's.
    Decl::loom("claim.waiter.not_worker"),
    Decl::loom("claim.waiter.claims"),
    Decl::loom("claim.waiter.finds_pool"),
    // The pool's copy.
    Decl::loom("claim.pool.starts"),
    Decl::loom("claim.pool.finds_waiter"),
    Decl::loom("claim.pool.drops_unrun"),
    // A limit (`limit.rs`): a wait for room (`Acquire`), from its polls and its drop.
    Decl::loom("limit.acquire.immediate"),
    Decl::loom("limit.acquire.queues"),
    Decl::loom("limit.acquire.still_waiting"),
    Decl::loom("limit.acquire.granted"),
    Decl::loom("limit.drop.queued"),
    Decl::loom("limit.drop.granted"),
    // A blocking waiter (`spawn_or_wait`) that takes over the room granted to an async
    // waiter of its own thread.
    Decl::loom("limit.acquire.takes_over"),
    // The call of `spawn` or `spawn_future`: room now, or a place in line taken at once.
    Decl::loom("limit.line.room"),
    Decl::loom("limit.line.queues"),
    // `try_spawn`.
    Decl::loom("limit.try.takes"),
    Decl::loom("limit.try.full"),
    // A permit given back (a task's closure done or dropped, a granted waiter dropped).
    Decl::loom("limit.release.to_waiter"),
    Decl::loom("limit.release.frees"),
    // ... passing over the async waiters of a thread blocked in `spawn_or_wait`.
    Decl::loom("limit.release.passes_blocked"),
    // A future task (`future_task.rs`): a wake-up (or the cancel of a dropped task).
    Decl::loom("future.wake.schedules"),
    Decl::loom("future.wake.already_scheduled"),
    Decl::loom("future.wake.notifies_running"),
    Decl::loom("future.wake.already_notified"),
    Decl::loom("future.wake.after_done"),
    // A poll job, or a poll a waiter claimed.
    Decl::loom("future.run.stale"),
    Decl::loom("future.run.pending"),
    Decl::loom("future.run.repoll"),
    Decl::loom("future.run.ready"),
    Decl::loom("future.run.panicked"),
    Decl::loom("future.run.cancelled"),
    // A waiter of the future task on a rayon worker (a poll of the task, `wait`, `join`):
    // it runs the queued poll, or finds none (queued), and a queued poll wakes it.
    // Under loom every waiter may help: only the std tests
    // (`future_task::a_waiter_off_the_pool_never_polls_inline`) reach this one.
    Decl::std("future.help.not_worker"),
    Decl::loom("future.help.claims"),
    Decl::loom("future.help.nothing_queued"),
    Decl::loom("future.help.wakes_waiter"),
];

/// Marks an arm of this crate: `arm!("claim.waiter.claims")`.
#[cfg(any(bridge_loom, bridge_coverage))]
macro_rules! arm {
    ($name:expr) => {
        bridge_core::__arm!($crate::coverage_arms::ARMS, $name)
    };
}
#[cfg(not(any(bridge_loom, bridge_coverage)))]
macro_rules! arm {
    // The name stays in the expansion: two arms of one `if` are not one block to clippy.
    ($name:expr) => {{
        let _: &str = $name;
    }};
}
pub(crate) use arm;
