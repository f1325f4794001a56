//! The calling thread's context: the runtime (if any) that a call made here finds, the marks
//! the bridge leaves on the threads where it polls, and the route a call made here takes.
//! The crate's bottom layer: it imports only `shutdown` and `sync`.

use crate::shutdown;
use std::cell::Cell;
use tokio::runtime::{Handle, RuntimeFlavor};

crate::sync::thread_flag! {
    /// Whether this thread is a handoff worker: its submits bypass the cap.
    static ON_HANDOFF_WORKER;
}

/// Marks this thread as a handoff worker, for good.
pub(crate) fn mark_handoff_worker() {
    ON_HANDOFF_WORKER.with(|on| on.set(true));
}

/// Whether this thread is a handoff worker (no runtime has entered it; the future it polls
/// has a handle entered).
pub(crate) fn on_handoff_worker() -> bool {
    ON_HANDOFF_WORKER.with(Cell::get)
}

thread_local! {
    /// Whether a free loop is running on this thread. Without a destructor, so
    /// readable in thread-local destructors.
    static FREE: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread runs a free poll loop (`in_place::poll_free`) further up its stack, so that no
/// runtime has entered it but the loop's handle (unless sync code in the future started a
/// multi-thread runtime of its own and calls from its `block_on` body: the nested loop then
/// clears the budget all the same, `in_place::poll_any`).
pub(crate) fn in_free_loop() -> bool {
    FREE.try_with(Cell::get).unwrap_or(false)
}

/// Marks this thread as running a free loop until dropped (a panic included).
pub(crate) struct MarkFree(bool);

impl MarkFree {
    pub(crate) fn new() -> Self {
        Self(FREE.try_with(|free| free.replace(true)).unwrap_or(true))
    }
}

impl Drop for MarkFree {
    fn drop(&mut self) {
        let _ = FREE.try_with(|free| free.set(self.0));
    }
}

/// How [`run_blocking`](crate::run::run_blocking) runs a future from the calling context: the label of each route,
/// as [`route`] reports it and [`IoMetrics`](crate::metrics::IoMetrics) counts it.
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
    /// A task on a multi-thread runtime's worker: the future is polled on the worker with
    /// that runtime's handle, where its I/O lives, and a wake flag of its own. Only after a
    /// first poll that is not ready does the worker leave the scheduler (`block_in_place`),
    /// so that its other tasks move to another thread; a future ready at once costs no
    /// hand-off.
    OnWorker,
    /// A current-thread runtime (body, task, `spawn_blocking` thread, `LocalSet`), or a
    /// thread-local destructor that runs after tokio's own at thread exit: the future runs on
    /// a handoff worker with the shared [`IoRuntime`](crate::io_runtime::IoRuntime)'s handle while this
    /// thread blocks on a oneshot.
    ///
    /// A multi-thread runtime's threads other than its workers (the `block_on` body, a
    /// `LocalSet` there and its `spawn_local` tasks, a `spawn_blocking` thread) take this
    /// route too, with that runtime's handle: the future then runs as on a thread of its own,
    /// outside the caller's task (whose cooperative budget a nested poll loop would spend for
    /// good) and outside the entered runtime (so that sync code in it may start a runtime of
    /// its own), which only `block_in_place` could give on this thread, and `block_in_place`
    /// panics in a `LocalSet`, which no public tokio API tells apart from the `block_on` body.
    ///
    /// A current-thread runtime's `spawn_blocking` thread takes this route too: that runtime
    /// drives its I/O and timers only while its own thread sits in `Runtime::block_on`, which
    /// nothing guarantees (it may be blocked waiting for this very thread).
    Handoff,
    /// No runtime (a plain thread, a rayon worker): the future is polled on this thread with
    /// the shared [`IoRuntime`](crate::io_runtime::IoRuntime)'s handle entered, whose workers
    /// drive its I/O and timers while this thread waits on a wake flag of its own. Also a
    /// multi-thread runtime that is shutting down (a value dropped by its shutdown), and a
    /// call nested in a future that the bridge polls on a thread no runtime has entered (a
    /// handoff worker, another call with no runtime): polled right there, with the handle
    /// entered there.
    Inline,
}

/// The route a [`run_blocking`](crate::run::run_blocking) call made here would take.
///
/// It asks nothing that can panic and installs nothing: it reads tokio's thread-local
/// context, and on a multi-thread runtime whether that runtime is shutting down.
///
/// # Examples
///
/// ```
/// let rt = tokio::runtime::Runtime::new().unwrap();
/// let route = rt.block_on(async { tokio::spawn(async { bridge_tokio::route() }).await.unwrap() });
/// assert_eq!(route, bridge_tokio::Route::OnWorker);
/// ```
pub fn route() -> Route {
    plan().route()
}

/// What a call made here does: its [`Route`], with what that route needs. Decided in one
/// place, [`plan`], from the calling thread's context; `run_blocking` counts the route and
/// runs the plan, and the family's other blocking waits ask it how to block.
#[derive(Debug)]
pub(crate) enum Plan {
    /// [`Route::Inline`]: poll here, with `handle` (`None`: the shared I/O runtime's)
    /// entered. `free`: no runtime had entered this thread, which is marked as a free loop's
    /// while the call polls. `dying`: a multi-thread runtime that is shutting down was
    /// entered here (its values dropped by its shutdown call from here).
    Inline {
        handle: Option<Handle>,
        free: bool,
        dying: bool,
    },
    /// [`Route::OnWorker`]: a worker of this multi-thread runtime, which leaves the scheduler
    /// (`block_in_place`) before it blocks.
    OnWorker(Handle),
    /// [`Route::Handoff`]: a handoff worker polls, with `handle` (`None`: the shared I/O
    /// runtime's).
    Handoff(Option<Handle>),
}

impl Plan {
    /// The route this plan takes.
    pub(crate) fn route(&self) -> Route {
        match self {
            Plan::Inline { .. } => Route::Inline,
            Plan::OnWorker(_) => Route::OnWorker,
            Plan::Handoff(_) => Route::Handoff,
        }
    }
}

/// The plan of a call made here.
pub(crate) fn plan() -> Plan {
    match ambient() {
        Ambient::None => Plan::Inline {
            handle: None,
            free: true,
            dying: false,
        },
        Ambient::Dying => Plan::Inline {
            handle: None,
            free: false,
            dying: true,
        },
        Ambient::MultiThread(handle) => Plan::Inline {
            handle: Some(handle),
            free: false,
            dying: false,
        },
        Ambient::Worker(handle) => Plan::OnWorker(handle),
        Ambient::RuntimeThread(handle) => Plan::Handoff(Some(handle)),
        Ambient::CurrentThread | Ambient::Exiting => Plan::Handoff(None),
    }
}

/// The runtime context of the calling thread, as [`plan`] reads it.
#[derive(Debug)]
enum Ambient {
    /// No runtime is entered here.
    None,
    /// A worker thread of a multi-thread runtime, which must leave the scheduler
    /// (`block_in_place`) before it blocks.
    Worker(Handle),
    /// A thread of a live multi-thread runtime that is not its worker and that the bridge
    /// has not made its own: the runtime's `block_on` body, a `LocalSet` there (its body or a
    /// `spawn_local` task), a `spawn_blocking` thread, a thread inside `Handle::enter`. The
    /// runtime may have entered it (the `block_on` body and a `LocalSet` are inside a task's
    /// poll, with its budget) and no public tokio API tells which of these it is, while only
    /// `block_in_place` leaves an entered runtime, and it panics in a `LocalSet`: the future
    /// runs on a handoff worker with this handle, a thread of its own.
    RuntimeThread(Handle),
    /// A thread of a live multi-thread runtime that the bridge polls on with no runtime
    /// entered but its handle: a handoff worker, or a thread inside one of the bridge's
    /// inline poll loops (a call nested in a future that `run_blocking` polls). It may block
    /// as it is.
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

fn ambient() -> Ambient {
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
    if in_free_loop() || on_handoff_worker() {
        return Ambient::MultiThread(handle);
    }
    Ambient::RuntimeThread(handle)
}
