//! Which route a call takes from the calling thread's context.

use crate::shutdown;
use tokio::runtime::{Handle, RuntimeFlavor};

/// How [`run_blocking`](crate::run_blocking) runs a future from the calling context.
///
/// # Examples
///
/// ```
/// use bridge_tokio::Route;
///
/// // A plain thread has no runtime: the future is polled right here.
/// assert_eq!(bridge_tokio::route(), Route::Inline);
///
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// // A current-thread runtime cannot be blocked in place: the future goes to a worker.
/// assert_eq!(rt.block_on(async { bridge_tokio::route() }), Route::Handoff);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Route {
    /// A multi-thread runtime's thread (a task on a worker, the `block_on` body, a
    /// `spawn_blocking` thread, a `LocalSet` there): the future is polled on this thread with
    /// the ambient runtime's handle, where its I/O lives, and a wake flag of its own. A worker
    /// first leaves the scheduler (`block_in_place`), so that its other tasks move to another
    /// thread.
    BlockInPlace,
    /// A current-thread runtime (body, task, `spawn_blocking` thread, `LocalSet`), or a
    /// thread-local destructor that runs after tokio's own at thread exit: the future runs on
    /// a handoff worker with the shared [`IoRuntime`](crate::IoRuntime)'s handle while this
    /// thread blocks on a oneshot.
    ///
    /// A current-thread runtime's `spawn_blocking` thread takes this route too: that runtime
    /// drives its I/O and timers only while its own thread sits in `Runtime::block_on`, which
    /// nothing guarantees (it may be blocked waiting for this very thread).
    Handoff,
    /// No runtime (a plain thread, a rayon worker), or a multi-thread runtime that is shutting
    /// down (a value dropped by its shutdown): the future is polled on this thread, its I/O and
    /// timers driven by the shared [`IoRuntime`](crate::IoRuntime).
    Inline,
}

/// The route a [`run_blocking`](crate::run_blocking) call made here would take.
///
/// It asks nothing that can panic and installs nothing: it reads tokio's thread-local
/// context, and on a multi-thread runtime whether that runtime is shutting down.
///
/// # Examples
///
/// ```
/// let rt = tokio::runtime::Runtime::new().unwrap();
/// let route = rt.block_on(async { tokio::spawn(async { bridge_tokio::route() }).await.unwrap() });
/// assert_eq!(route, bridge_tokio::Route::BlockInPlace);
/// ```
pub fn route() -> Route {
    ambient().route()
}

/// The runtime context of the calling thread.
#[derive(Debug)]
pub(crate) enum Ambient {
    /// No runtime is entered here.
    None,
    /// A worker thread of a multi-thread runtime, which must leave the scheduler
    /// (`block_in_place`) before it blocks.
    Worker(Handle),
    /// Another thread of a live multi-thread runtime (its `block_on` body, a `spawn_blocking`
    /// thread, a `LocalSet` there, a worker inside `block_in_place`): it may block as it is.
    MultiThread(Handle),
    /// A multi-thread runtime that is shutting down: values dropped by its shutdown call from
    /// here, and its timers will never fire again.
    Dying,
    /// A current-thread runtime (or a flavor this crate does not know).
    CurrentThread,
    /// The thread is exiting and tokio's thread-locals are gone (a thread-local destructor
    /// that runs after tokio's): no runtime can be entered here, only handed a task.
    Exiting,
}

impl Ambient {
    /// The route of a call made in this context.
    pub(crate) fn route(&self) -> Route {
        match self {
            Ambient::None | Ambient::Dying => Route::Inline,
            Ambient::CurrentThread | Ambient::Exiting => Route::Handoff,
            Ambient::Worker(_) | Ambient::MultiThread(_) => Route::BlockInPlace,
        }
    }
}

pub(crate) fn ambient() -> Ambient {
    let handle = match Handle::try_current() {
        Ok(handle) => handle,
        Err(error) if error.is_thread_local_destroyed() => return Ambient::Exiting,
        Err(_) => return Ambient::None,
    };
    if !matches!(handle.runtime_flavor(), RuntimeFlavor::MultiThread) {
        return Ambient::CurrentThread;
    }
    if tokio::runtime::worker_index().is_some() {
        // The hot path: a worker polling a task holds its core, while a shutdown drops tasks
        // from workers that hold none. Only without a core (a shutdown, or a call nested in
        // block_in_place) is the spawn probe worth its cost.
        if shutdown::worker_without_core() && shutdown::shutting_down(&handle) {
            return Ambient::Dying;
        }
        return Ambient::Worker(handle);
    }
    if shutdown::shutting_down(&handle) {
        return Ambient::Dying;
    }
    Ambient::MultiThread(handle)
}
