//! Hand CPU-heavy work to rayon and await it: async code stays free to do I/O while the
//! work runs on a bounded, work-stealing pool.
//!
//! ```
//! # let rt = tokio::runtime::Runtime::new().unwrap();
//! # rt.block_on(async {
//! // In an async task: decode on rayon, not on the tokio worker that issued the read.
//! let block = vec![7u8; 4096];
//! let sum = bridge_rayon::spawn(move || block.iter().map(|&b| b as u64).sum::<u64>()).await;
//! assert_eq!(sum, 7 * 4096);
//! # });
//! ```
//!
//! - [`spawn`], [`spawn_fifo`], [`spawn_cancellable`]: run a closure on rayon's global pool;
//!   [`ThreadPoolExt`] does the same for a pool of your own.
//! - [`Task`]: the handle. `.await` it on any executor, block on it ([`Task::wait`] and its
//!   timed forms), or poll it ([`Task::try_get`]). A panic in the closure comes back to
//!   whoever takes the result; [`Task::join`] and [`Task::catch_unwind`] give it as a
//!   [`TaskError`] instead.
//! - Dropping a `Task` cancels the job if it has not started; [`CancelFlag`] lets a running
//!   closure notice; [`Task::detach`] lets it run unobserved.
//!
//! # Inside rayon
//!
//! Spawning from a rayon worker puts the job on that worker's pool. Waiting for a task on a
//! rayon worker (with [`Task::wait`], or `bridge::block_on(task)`) first runs the pool's
//! pending work on that thread until the result is there, so even a pool of one thread that
//! blocks on its own tasks does not deadlock. A job that another worker already runs is
//! waited for. Waiting across pools (a worker of pool A blocking on a task of pool B whose
//! workers all wait for A) can still deadlock, as it would with rayon alone.
//!
//! The result travels through `bridge_core::oneshot`, whose send happens-before the
//! receive: what the closure wrote is visible to whoever takes its result.
#![forbid(unsafe_code)]

mod error;
mod job;
mod spawn;
mod task;

pub use error::TaskError;
pub use job::CancelFlag;
#[cfg(bridge_loom)]
#[doc(hidden)]
pub use spawn::__loom_task;
pub use spawn::{ThreadPoolExt, spawn, spawn_cancellable, spawn_fifo};
pub use task::{CatchUnwind, Task};
