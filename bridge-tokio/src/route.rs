//! Which route a call takes from the calling thread's context.

use crate::local;
use crate::probe;
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
    /// A multi-thread runtime's task, `block_on` body or `spawn_blocking` thread: the thread
    /// leaves the scheduler (`block_in_place`) and drives the future here with the ambient
    /// runtime's handle, where its I/O lives.
    BlockInPlace,
    /// A current-thread runtime (body, task, `spawn_blocking` thread) or a `LocalSet`: the
    /// future runs as a task of a multi-thread runtime (the ambient one under a `LocalSet` on
    /// a multi-thread runtime, else the shared [`IoRuntime`](crate::IoRuntime)) while this
    /// thread blocks on a oneshot. Also a thread-local destructor that runs after tokio's
    /// own, where no runtime can be entered any more.
    ///
    /// A current-thread runtime's `spawn_blocking` thread takes this route too: the ambient
    /// handle's `block_on` would drive that runtime's I/O and timers only while its own thread
    /// sits in `Runtime::block_on`, which nothing guarantees (it may be blocked waiting for
    /// this very thread).
    Handoff,
    /// No runtime (a plain thread, a rayon worker): the future is polled on this thread,
    /// its I/O and timers driven by the shared [`IoRuntime`](crate::IoRuntime).
    Inline,
}

/// The route a [`run_blocking`](crate::run_blocking) call made here would take.
///
/// On a multi-thread runtime's worker thread the answer is immediate. On its other threads
/// (the `block_on` body, `spawn_blocking` threads) tokio's public API cannot tell whether a
/// `LocalSet` is running this code (see [`LocalSet`](crate::LocalSet)), so it asks
/// `tokio::task::block_in_place` with an empty closure, which refuses (panics, caught and
/// silenced) inside a `LocalSet`.
///
/// # Examples
///
/// ```
/// let rt = tokio::runtime::Runtime::new().unwrap();
/// let route = rt.block_on(async { tokio::spawn(async { bridge_tokio::route() }).await.unwrap() });
/// assert_eq!(route, bridge_tokio::Route::BlockInPlace);
/// ```
pub fn route() -> Route {
    match ambient() {
        Ambient::None => Route::Inline,
        Ambient::Local(_) | Ambient::CurrentThread | Ambient::Exiting => Route::Handoff,
        Ambient::Worker(_) => Route::BlockInPlace,
        Ambient::MultiThread(_) => {
            if probe::block_in_place_allowed() {
                Route::BlockInPlace
            } else {
                Route::Handoff
            }
        }
    }
}

/// The runtime context of the calling thread, as far as it can be told without trying.
#[derive(Debug)]
pub(crate) enum Ambient {
    /// No runtime is entered here.
    None,
    /// A worker thread of a multi-thread runtime, where `block_in_place` is allowed.
    Worker(Handle),
    /// Another thread of a multi-thread runtime (its `block_on` body, a `spawn_blocking`
    /// thread, a `LocalSet`); whether `block_in_place` is allowed is only known by trying.
    MultiThread(Handle),
    /// A current-thread runtime (or a flavor this crate does not know).
    CurrentThread,
    /// Inside a [`LocalSet`](crate::LocalSet); the handle is the ambient runtime's if it is
    /// a multi-thread one.
    Local(Option<Handle>),
    /// The thread is exiting and tokio's thread-locals are gone (a thread-local destructor
    /// that runs after tokio's): no runtime can be entered here, only handed a task.
    Exiting,
}

pub(crate) fn ambient() -> Ambient {
    let handle = match Handle::try_current() {
        Ok(handle) => handle,
        Err(error) if error.is_thread_local_destroyed() => return Ambient::Exiting,
        Err(_) => return Ambient::None,
    };
    let multi_thread = matches!(handle.runtime_flavor(), RuntimeFlavor::MultiThread);
    if local::is_marked() {
        return Ambient::Local(multi_thread.then_some(handle));
    }
    if !multi_thread {
        return Ambient::CurrentThread;
    }
    // A LocalSet is !Send, so no worker's task owns one: it runs in a block_on body, a
    // spawn_blocking thread or inside block_in_place, where worker_index() is None. (A
    // LocalSet driven by another executor inside a worker's task is the exception, and is
    // only known if it is a bridge_tokio::LocalSet.)
    if tokio::runtime::worker_index().is_some() {
        Ambient::Worker(handle)
    } else {
        Ambient::MultiThread(handle)
    }
}
