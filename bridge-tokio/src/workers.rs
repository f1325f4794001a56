//! The handoff pool: threads that run handed-off futures with the I/O runtime's handle.
//!
//! A caller that cannot be blocked in place (a current-thread runtime, a `LocalSet`) gives
//! its future to an idle worker and blocks on a oneshot for the outcome. A worker polls the
//! future with `Handle::block_on` of the I/O runtime, so the future's I/O, timers and the
//! tasks it spawns live on that runtime, which its own workers always drive: nothing is
//! stranded between jobs. After a job a worker spins for a moment (a caller in a loop hands
//! over the next job within microseconds, and catching it awake saves two cross-thread
//! wake-ups), then sleeps; after [`IDLE`] without a job it retires. The pool grows when no
//! worker is idle, so a nested call on a worker (which takes another route anyway) can never
//! wait for a worker that waits for it.

use crate::loom::{Arc, AtomicBool, Mutex, Ordering, thread};
use std::time::{Duration, Instant};

/// How long a worker waits for a job before it retires.
pub(crate) const IDLE: Duration = Duration::from_secs(10);

/// A unit of work for a worker. It gets a callback that puts the worker back in the idle
/// list, to call once its result is ready but before it delivers it: a caller that hands
/// off in a loop then finds this worker idle for its next call instead of starting a new
/// thread. (A job that does not call it is put back when it returns.) It must not unwind
/// (the handoff job catches the future's panics); if it does, the worker survives and the
/// job's caller sees its channel close.
pub type Job = Box<dyn FnOnce(&dyn Fn()) + Send + 'static>;

/// Where a caller leaves a job for one worker.
struct Mailbox {
    job: Mutex<Option<Job>>,
    /// Whether `job` holds a job: set and cleared only under `job`'s mutex, together with the
    /// slot, so it is never left set with an empty mailbox (a worker would spin on it instead
    /// of sleeping or retiring). A hint for the worker's spin, which spares it the lock; the
    /// job itself is taken under the mutex.
    ready: AtomicBool,
    thread: thread::Thread,
}

/// The idle workers.
#[derive(Default)]
pub struct Pool {
    idle: Mutex<Vec<Arc<Mailbox>>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let idle = self.idle.with(|idle| idle.len());
        f.debug_struct("Pool").field("idle", &idle).finish()
    }
}

impl Default for Mutex<Vec<Arc<Mailbox>>> {
    fn default() -> Self {
        Mutex::new(Vec::new())
    }
}

impl Pool {
    /// The process's pool.
    #[cfg(not(bridge_loom))]
    pub(crate) fn global() -> &'static Arc<Pool> {
        static POOL: std::sync::OnceLock<Arc<Pool>> = std::sync::OnceLock::new();
        POOL.get_or_init(|| Arc::new(Pool::default()))
    }

    /// Runs `job` on an idle worker of `pool`, or on a new one if none is idle.
    pub fn submit(pool: &Arc<Self>, job: Job) {
        let mut job = Some(job);
        // The job is delivered inside the idle list's critical section: a worker that then
        // fails to retire (it locks the list after us) is sure to see it.
        let delivered = pool.idle.with(|idle| {
            let worker = idle.pop()?;
            worker.job.with(|slot| {
                *slot = job.take();
                // ORDERING: Relaxed: a hint, written under the mailbox's mutex. The worker
                // that sees it takes that mutex, which orders it after this critical section
                // (it read a value written in it), so it finds the job there.
                worker.ready.store(true, Ordering::Relaxed);
            });
            Some(worker)
        });
        match delivered {
            // The unpark only shortens the worker's sleep.
            Some(worker) => worker.thread.unpark(),
            None => {
                let job = job.take().expect("not delivered");
                let pool = Arc::clone(pool);
                let spawned = thread::Builder::new()
                    .name("bridge-handoff".into())
                    .spawn(move || Pool::work(&pool, job));
                // Without a thread the job is dropped, which closes its caller's channel: the
                // caller learns it as RuntimeGone instead of waiting forever.
                drop(spawned);
            }
        }
    }

    /// A worker's life: run the first job, then every job handed to it, until it retires.
    fn work(pool: &Arc<Self>, first: Job) {
        let me = Arc::new(Mailbox {
            job: Mutex::new(None),
            ready: AtomicBool::new(false),
            thread: thread::current(),
        });
        let mut next = Some(first);
        while let Some(job) = next.take() {
            let idle = std::cell::Cell::new(false);
            let back_to_idle = || {
                if !idle.replace(true) {
                    pool.idle.with(|list| list.push(Arc::clone(&me)));
                }
            };
            // The job catches the future's panics; anything else is contained here so that
            // the worker lives on (the job's caller sees its channel close).
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&back_to_idle)));
            back_to_idle();
            next = pool.wait_for_job(&me);
        }
    }

    /// Waits for a job; `None` once the worker has retired.
    fn wait_for_job(&self, me: &Arc<Mailbox>) -> Option<Job> {
        let deadline = Instant::now() + IDLE;
        // ORDERING: Relaxed: only a hint that spares the spin a lock; the job itself is read
        // under the mailbox's mutex, which orders that read after the delivery.
        let ready = || me.ready.load(Ordering::Relaxed);
        loop {
            if let Some(job) = me.take() {
                return Some(job);
            }
            if thread::wait(ready, deadline) {
                let retired = self.idle.with(|idle| {
                    let position = idle.iter().position(|worker| Arc::ptr_eq(worker, me));
                    position.map(|position| idle.remove(position)).is_some()
                });
                if retired {
                    return None;
                }
                // A caller took this worker from the idle list, and put its job in the mailbox
                // before it let go of the list: the job is there.
                return Some(
                    me.take()
                        .expect("a caller delivers before letting go of the list"),
                );
            }
        }
    }
}

impl Mailbox {
    /// Takes the job out of the mailbox, if one is there.
    fn take(&self) -> Option<Job> {
        self.job.with(|slot| {
            let job = slot.take()?;
            // ORDERING: Relaxed: cleared under the mailbox's mutex, with the slot; the next
            // delivery sets it under the same mutex, after this critical section.
            self.ready.store(false, Ordering::Relaxed);
            Some(job)
        })
    }
}
