#![doc = include_str!("../README.md")]
//!
//! # What is here
//!
//! - [`spawn`], [`spawn_fifo`], [`spawn_cancellable`]: run a closure on rayon's global pool;
//!   [`ThreadPoolExt`] does the same for a pool of your own.
//! - [`spawn_future`]: run a future on rayon's global pool, one poll per wake-up as a job
//!   ([`ThreadPoolExt::spawn_future_task`] on a pool of your own); it gives the same [`Task`].
//! - [`Task`]: the handle. `.await` it on any executor, block on it ([`Task::wait`] and its
//!   timed forms), or poll it ([`Task::try_get`]). A panic in the closure comes back to
//!   whoever takes the result; [`Task::join`] and [`Task::catch_unwind`] give it as an
//!   [`Error`] instead. `Task` and `Error` are the family's (from bridge-core): the same
//!   handle and error as bridge-tokio's I/O tasks.
//! - Dropping a `Task` cancels the job if it has not started; [`CancelFlag`] lets a running
//!   closure notice; [`Task::detach`] lets it run unobserved.
//! - [`Limit`]: backpressure. At most N tasks of a limit in flight at once; the others wait
//!   for room in one FIFO line ([`Limit::spawn`] returns a `Task` that waits,
//!   [`Limit::spawn_or_wait`] blocks the caller) or are refused ([`Limit::try_spawn`]).
//! - [`stream::on_cpu`]: a `Stream` driven on rayon, consumed anywhere.
//! - [`metrics`]: counts of the tasks spawned, started, finished, panicked and cancelled,
//!   queued now, and a histogram of their queue wait (see [Metrics](#metrics)).
//!
//! # Inside rayon
//!
//! Spawning from a rayon worker puts the job on that worker's pool. Whoever waits on a worker
//! of the task's pool runs what it waits for, and only that: a wait there ([`Task::wait`],
//! [`Task::join`], [`Task::wait_timeout`], [`Task::wait_deadline`], a poll of the task in
//! `bridge::run_blocking` or `bridge::block_on`, a CPU-side stream read there) runs the
//! task's closure, or its future's queued poll, itself when no pool thread has taken it. So
//! every worker of a pool may wait at once for work queued on that pool (a `par_iter` over
//! synchronous calls, a pool of one thread), nested to any depth, with a time limit or
//! without, and it all finishes. A timed wait's limit bounds its waiting, not the work it
//! runs itself. A waiting job never runs an unrelated job on top of its stack while it holds
//! its locks.
//!
//! A job always runs as its own pool's work (its threads, stack size and start handler): a
//! thread outside rayon, or a worker of another pool, never runs it; it blocks (it is no
//! worker of the job's pool) until a thread of the job's pool does. Nor does a worker run it
//! while a tokio runtime is entered on its thread (a runtime's `block_on` body there), where
//! a job that starts a runtime of its own could not; it blocks too. (That needs the feature
//! `tokio`, which the facade turns on; without it a worker helps there as anywhere.)
//!
//! What can still deadlock is what plain blocking waits would deadlock on, a cycle the
//! program builds: jobs on different workers that wait for each other's tasks; a thread
//! outside the task's pool (or a worker inside a runtime's `block_on`) that waits for a task
//! while every worker of the pool is blocked in something the bridge cannot see (such a
//! blocking wait is counted in
//! [`CpuMetrics::stalled_waits`] and named by a warning at the stall threshold). See [`Task`]
//! for the rules.
//!
//! The result travels through `bridge::oneshot`, whose send happens-before the
//! receive: what the closure wrote is visible to whoever takes its result.
//!
//! # Metrics
//!
//! [`metrics()`](metrics()) takes a snapshot of process-wide counters that every task
//! feeds, whatever the pool and the way it was spawned: spawned, started, finished,
//! panicked, cancelled before it started, queued now, and the time from spawn to start as a
//! histogram of sampled tasks ([`Histogram`]). Counting costs a relaxed increment on a cache
//! line that the counting thread owns (each thread counts on a shard of its own, which a
//! snapshot sums), so the hot path takes no lock and writes nothing shared; the queue wait
//! reads the clock for one spawn in 64 per thread. See [`CpuMetrics`] for what each field
//! counts and what a snapshot taken while tasks run may see.
//!
//! ```
//! let m = bridge::metrics().cpu;
//! println!(
//!     "cpu: spawned={} started={} finished={} panicked={} cancelled={} queued={} p99_wait={:?}",
//!     m.spawned, m.started, m.finished, m.panicked, m.cancelled, m.queued(),
//!     m.queue_wait.percentile(99.0),
//! );
//! ```
//!
//! # Tracing
//!
//! With the feature `tracing` (off by default), the [`tracing`](https://docs.rs/tracing)
//! span current where a task is spawned ([`spawn`], [`spawn_fifo`], [`spawn_cancellable`],
//! [`ThreadPoolExt`]'s methods) is current while its closure runs: on the pool thread, or
//! inline in the waiter that claims the job (the span of the spawn then, not the
//! waiter's). The span is captured at the spawn and entered around the closure: a dispatcher
//! lookup at the spawn and a span enter and exit where the closure runs, small next to the
//! hop to another thread (a program that never installed a subscriber has no span, and
//! skips even the lookup).
//! Without the feature the crate does not depend on `tracing` at all.
//!
//! ```
//! let span = tracing::info_span!("request", id = 7);
//! let task = span.in_scope(|| {
//!     bridge::spawn(|| {
//!         tracing::debug!("hashing"); // inside `request` when the feature is on
//!         42
//!     })
//! });
//! assert_eq!(task.wait(), 42);
//! ```
// The crate's only `unsafe` code: the OS calls of `os.rs`, and the cells of a task's job
// (`job_claim.rs`), whose protocol the loom models check.
#![deny(unsafe_code)]

// Under loom nothing yields and no slice is asked for: the courtesy's clock and OS calls go
// unused there.
#[cfg_attr(bridge_loom, allow(dead_code))]
mod courtesy;
mod future_task;
mod home;
mod job;
#[allow(unsafe_code)]
mod job_claim;
mod limit;
#[cfg(all(test, bridge_loom))]
mod loom_models;
mod metrics;
#[allow(unsafe_code)]
#[cfg_attr(bridge_loom, allow(dead_code))]
mod os;
mod priority;
pub mod settings;
mod spawn;
mod stall;
#[cfg(not(bridge_loom))]
pub mod stream;
mod sync;
mod task;
#[cfg(feature = "tracing")]
mod trace;

pub use bridge_core::Histogram;
pub use bridge_core::{CatchUnwind, Error, Task};
pub use future_task::spawn_future;
pub use job::CancelFlag;
pub use limit::Limit;
pub use metrics::{CpuMetrics, metrics};
pub use priority::lower_thread_priority;
pub use spawn::{ThreadPoolExt, spawn, spawn_cancellable, spawn_fifo};

/// Compile-time checks of the handles' auto traits, run as doctests.
///
/// A [`Task`] (and its [`CatchUnwind`] future) is `Send`, `Sync` and `Unpin` when its value
/// is `Send`, and unwind-safe whatever the value, as tokio's `JoinHandle` is: it can be
/// moved into, or shared with, a closure given to `std::panic::catch_unwind` without
/// `AssertUnwindSafe`, since no panic can leave it half-updated.
///
/// ```
/// use std::panic::{RefUnwindSafe, UnwindSafe};
///
/// fn check<X: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe>() {}
/// check::<bridge_rayon::Task<std::cell::RefCell<Vec<u8>>>>();
/// check::<bridge_rayon::CatchUnwind<std::cell::Cell<u8>>>();
///
/// let task = bridge_rayon::spawn(|| -> u8 { panic!("bad block") });
/// let shown = std::panic::catch_unwind(|| format!("{task:?}")).unwrap();
/// assert!(shown.starts_with("Task"));
/// assert!(std::panic::catch_unwind(move || task.wait()).is_err());
/// ```
///
/// An [`Error`] is `Send + Sync + 'static` and unwind-safe, whatever its panic payload:
/// `?` takes it into `Box<dyn Error + Send + Sync>` and `anyhow::Error`.
///
/// ```
/// use std::panic::{RefUnwindSafe, UnwindSafe};
///
/// fn check<X: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe + 'static>() {}
/// check::<bridge_core::Error>();
/// ```
///
/// A [`CancelFlag`] is `Copy`, `Send` and `Sync`: the closure can read it from any job it
/// fans out (`par_iter`, `rayon::join`, `rayon::scope`).
///
/// ```
/// fn check<X: Copy + Send + Sync>() {}
/// check::<bridge_rayon::CancelFlag<'_>>();
/// ```
///
/// A task of a value that cannot cross threads cannot either:
///
/// ```compile_fail
/// fn send<X: Send>() {}
/// send::<bridge_rayon::Task<std::rc::Rc<u8>>>();
/// ```
#[cfg(doctest)]
pub struct CompileFail;
