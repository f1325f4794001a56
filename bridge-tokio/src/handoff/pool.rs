//! The handoff pool: threads that run handed-off futures with the I/O runtime's handle.
//!
//! A caller that cannot be blocked in place (a current-thread runtime, a `LocalSet`) gives
//! its future to an idle worker and blocks on a oneshot for the outcome. A worker polls the
//! future with the I/O runtime's handle, so the future's I/O, timers and the tasks it spawns
//! live on that runtime, which its own workers always drive: nothing is stranded between jobs.
//!
//! The pool is bounded. A job goes to an idle worker if there is one, else to a new worker
//! while fewer than the cap are alive (`settings::handoff_threads`, 512 by default), else to
//! the back of a FIFO queue. A worker that finishes a job takes the queue's oldest job before
//! it goes idle, so a queued job waits only for the first worker to free up, and no worker is
//! idle while a job is queued. An idle worker spins for a moment (a caller in a loop hands
//! over the next job within microseconds, and catching it awake saves two cross-thread
//! wake-ups), then sleeps; after its keep-alive without a job it retires.
//!
//! A caller whose deadline passes while its job is still queued takes the job back out of the
//! queue and drops it unrun, on its own thread (where what the future borrows is alive), and
//! returns at its deadline instead of waiting for a worker to free up. A job that a worker has
//! already taken is asked to stop, and the caller waits for its drop (see the handoff).
//!
//! A job submitted from a worker itself (a handed-off future that hands off again, from a
//! current-thread runtime it built) never waits for the pool: it takes an idle worker or
//! starts a thread beyond the cap. Queued behind the pool's busy workers, it could wait for
//! the very worker that waits for it.
//!
//! The pool's state machine, one arm per decision (each under the pool's lock), each listed
//! as `pool.<where>.<arm>` for the coverage check (`tests/loom-arms.txt`):
//!
//! | where | arm | what happens |
//! | --- | --- | --- |
//! | submit | `deliver_idle` | an idle worker takes the job in its mailbox |
//! | submit | `start` | below the cap, nothing queued: a new worker starts with the job |
//! | submit | `start_oldest` | below the cap (it was raised), jobs queued: a new worker starts with the oldest, the job queues |
//! | submit | `start_nested` | on a worker, none idle: a new worker starts with the job, cap or not |
//! | submit | `queue` | at the cap, none idle: the job queues |
//! | start | `spawn_failed` | no thread: the job is dropped (its caller gets `Unavailable`) |
//! | start | `spawn_failed_drain` | no thread and no worker alive: the queued jobs are dropped too |
//! | after_job | `take_queued` | the worker moves the queue's oldest job to its mailbox |
//! | after_job | `go_idle` | nothing queued: the worker joins the idle list |
//! | idle | `take_mailbox` | a job was delivered: the worker runs it |
//! | idle | `retire` | the idle time passed and no caller took the worker: it ends |
//! | idle | `retire_refused` | the idle time passed, but a caller took the worker: it runs the job |
//! | cancel | `removed_queued` | the caller's deadline passed with its job still queued: the job leaves the queue, and the caller drops it unrun |
//! | cancel | `already_started` | the caller's deadline passed, and a worker has its job (or a spawn failure dropped it): the caller asks it to stop, and waits |

use crate::sync::{Arc, AtomicBool, Mutex, Ordering, thread};
use std::cell::Cell;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How long a worker waits for a job before it retires (a pool of the tests; the process's
/// follows the setting).
pub(crate) const IDLE: Duration = crate::settings::HANDOFF_KEEP_ALIVE;

/// The cap of a pool of the tests (the process's follows the setting).
pub(crate) const DEFAULT_MAX_THREADS: usize = crate::settings::HANDOFF_THREADS;

/// The name of every handoff thread.
pub(crate) const THREAD_NAME: &str = "bridge-handoff";

/// A unit of work for a worker. It gets a callback that puts the worker back in the idle
/// list (or, if a job is queued, hands it the oldest one to run next), to call once its
/// result is ready but before it delivers it: a caller that hands off in a loop then finds
/// this worker idle for its next call instead of starting a new thread. (A job that does not
/// call it gets the same when it returns.) It must not unwind
/// (the handoff job catches the future's panics); if it does, the worker survives and the
/// job's caller sees its channel close.
pub type Call = Box<dyn FnOnce(&dyn Fn()) + Send + 'static>;

/// Where a caller leaves a job for one worker.
struct Mailbox {
    job: Mutex<Option<Call>>,
    /// Whether `job` holds a job: set and cleared only under `job`'s mutex, together with the
    /// slot, so it is never left set with an empty mailbox (a worker would spin on it instead
    /// of sleeping or retiring). A hint for the worker's spin, which spares it the lock; the
    /// job itself is taken under the mutex.
    ready: AtomicBool,
    thread: thread::Thread,
}

/// The pool's bookkeeping, all under one lock.
struct State {
    /// The idle workers, the most recent last (it is the one still spinning, if any).
    idle: Vec<Arc<Mailbox>>,
    /// Jobs that wait for a worker, oldest first, each with its id (see [`Ticket`]): in id
    /// order, as ids grow and only removals happen inside the queue. Non-empty only while
    /// `idle` is empty.
    queue: VecDeque<(u64, Call)>,
    /// The id of the next job to queue.
    next_id: u64,
    /// Workers alive: counted from the decision to start one until it retires.
    threads: usize,
    /// The highest `threads` has been.
    peak: usize,
    /// The cap on `threads` for submits from outside the pool (at least 1).
    max: usize,
    /// How long an idle worker waits before it retires.
    idle_time: Duration,
}

impl State {
    /// Counts a worker about to start.
    fn add_thread(&mut self) {
        self.threads += 1;
        self.peak = self.peak.max(self.threads);
    }

    /// Queues `job` behind the others; returns its ticket.
    fn enqueue(&mut self, job: Call) -> Ticket {
        let id = self.next_id;
        self.next_id += 1;
        self.queue.push_back((id, job));
        Ticket(Some(id))
    }
}

/// What [`Pool::submit`] gives its caller: the job's id if it was queued, with which the
/// caller takes it back ([`Pool::withdraw`]) when its deadline passes before a worker took it.
#[derive(Debug)]
pub struct Ticket(Option<u64>);

/// The handoff workers and the jobs queued for them.
pub struct Pool {
    state: Mutex<State>,
    /// The process's pool takes its cap and idle time from `bridge::configure()` at each
    /// submit and each job's end; a pool of the tests keeps its own.
    follows_config: bool,
}

/// What `submit` decided under the lock, carried out after it.
enum Placement {
    /// An idle worker has the job in its mailbox; it may be asleep.
    Delivered(Arc<Mailbox>),
    /// A new worker is to start with this job (counted in `threads` already).
    Start(Call),
    /// The job is queued; the cap, if the queue was empty before (a burst of queued calls
    /// starts: feature `tracing` logs it).
    Queued(Option<usize>),
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (threads, idle, queued, peak, max) = self.state.with(|state| {
            (
                state.threads,
                state.idle.len(),
                state.queue.len(),
                state.peak,
                state.max,
            )
        });
        f.debug_struct("Pool")
            .field("threads", &threads)
            .field("idle", &idle)
            .field("queued", &queued)
            .field("peak", &peak)
            .field("max", &max)
            .finish()
    }
}

impl Default for Pool {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_THREADS)
    }
}

impl Pool {
    /// A pool of at most `max` threads (0 counts as 1) for submits from outside it.
    pub fn new(max: usize) -> Self {
        Self {
            follows_config: false,
            state: Mutex::new(State {
                idle: Vec::new(),
                queue: VecDeque::new(),
                next_id: 0,
                threads: 0,
                peak: 0,
                max: max.max(1),
                idle_time: IDLE,
            }),
        }
    }

    /// The process's pool.
    #[cfg(not(bridge_loom))]
    pub(crate) fn global() -> &'static Arc<Pool> {
        static POOL: std::sync::OnceLock<Arc<Pool>> = std::sync::OnceLock::new();
        POOL.get_or_init(|| {
            Arc::new(Pool {
                follows_config: true,
                ..Pool::default()
            })
        })
    }

    /// The process's pool takes the settings in force (see `follows_config`).
    fn configure(&self, state: &mut State) {
        if self.follows_config {
            state.max = crate::settings::handoff_threads();
            state.idle_time = crate::settings::handoff_keep_alive();
        }
    }

    /// Sets the cap (0 counts as 1); returns the previous one.
    #[cfg(all(test, bridge_loom))]
    pub fn set_max(&self, max: usize) -> usize {
        self.state
            .with(|state| std::mem::replace(&mut state.max, max.max(1)))
    }

    /// Sets how long an idle worker waits before it retires (from its next wait on); returns
    /// the previous time.
    #[cfg(test)]
    pub fn set_idle_time(&self, idle_time: Duration) -> Duration {
        self.state
            .with(|state| std::mem::replace(&mut state.idle_time, idle_time))
    }

    /// Workers alive, idle workers, queued jobs.
    pub fn stats(&self) -> (usize, usize, usize) {
        self.state
            .with(|state| (state.threads, state.idle.len(), state.queue.len()))
    }

    /// The most workers alive at once since the pool was made. Read after [`stats`](Self::stats)
    /// it is at least the count of workers alive that `stats` gave.
    pub fn peak(&self) -> usize {
        self.state.with(|state| state.peak)
    }

    /// Runs `job` on an idle worker of `pool`, on a new one below the cap, or queues it.
    /// Returns the job's ticket, for [`withdraw`](Self::withdraw).
    pub fn submit(pool: &Arc<Self>, job: Call) -> Ticket {
        let nested = crate::context::on_handoff_worker();
        // The job is delivered inside the pool's critical section: a worker that then fails
        // to retire (it locks the pool after us) is sure to see it.
        let (placement, ticket) = pool.state.with(|state| {
            pool.configure(state);
            if let Some(worker) = state.idle.pop() {
                worker.put(job);
                return (Placement::Delivered(worker), Ticket(None));
            }
            if nested {
                // Queued, this job could wait for the worker that waits for it.
                state.add_thread();
                return (Placement::Start(job), Ticket(None));
            }
            if state.threads < state.max {
                state.add_thread();
                return match state.queue.pop_front() {
                    None => (Placement::Start(job), Ticket(None)),
                    // The cap was raised while jobs were queued: the oldest goes first.
                    Some((_, oldest)) => {
                        let ticket = state.enqueue(job);
                        (Placement::Start(oldest), ticket)
                    }
                };
            }
            let first = state.queue.is_empty().then_some(state.max);
            (Placement::Queued(first), state.enqueue(job))
        });
        match placement {
            // The unpark only shortens the worker's sleep.
            Placement::Delivered(worker) => {
                worker.thread.unpark();
            }
            Placement::Start(job) => Pool::start(pool, job),
            Placement::Queued(first) => {
                if let Some(max) = first {
                    crate::trace::handoff_queue_started(max);
                }
            }
        }
        ticket
    }

    /// Takes the job of `ticket` back out of the queue, if no worker has taken it: its
    /// caller's deadline passed. The caller drops it (outside the lock: the drop runs the
    /// future's destructors). `None` when a worker has it (it went to one at once, or one took
    /// it from the queue since), or a spawn failure dropped it: the caller asks it to stop
    /// instead.
    pub fn withdraw(&self, ticket: Ticket) -> Option<Call> {
        self.state.with(|state| {
            // A binary search: the queue is in id order (see `State::queue`).
            let at = ticket.0.and_then(|id| {
                state
                    .queue
                    .binary_search_by_key(&id, |&(queued, _)| queued)
                    .ok()
            });
            match at {
                Some(at) => state.queue.remove(at).map(|(_, job)| job),
                None => None,
            }
        })
    }

    /// Starts a worker with `job` (already counted in `threads`).
    fn start(pool: &Arc<Self>, job: Call) {
        let worker_pool = Arc::clone(pool);
        // A failed spawn drops the job, whose drop may panic (a future's destructor): caught,
        // so that the count below is given back all the same (a leaked count is a slot of the
        // cap lost for good), then resumed for the caller.
        let spawned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            thread::spawn(THREAD_NAME, move || Pool::work(&worker_pool, job))
        }));
        if let Ok(Ok(())) = spawned {
            crate::trace::handoff_worker_started();
            return;
        }
        // Without a thread the job has been dropped with the thread's closure, which closes
        // its caller's channel: the caller learns it as Unavailable instead of waiting
        // forever. If no worker is alive, none would ever take the queued jobs either: they
        // are dropped too, outside the lock (a drop may run a caller's destructors).
        let stranded = pool.state.with(|state| {
            state.threads -= 1;
            if state.threads == 0 && !state.queue.is_empty() {
                std::mem::take(&mut state.queue)
            } else {
                VecDeque::new()
            }
        });
        drop(stranded);
        if let Err(payload) = spawned {
            std::panic::resume_unwind(payload);
        }
    }

    /// A worker's life: run the first job, then every job handed to it or queued, until it
    /// retires.
    fn work(pool: &Arc<Self>, first: Call) {
        crate::context::mark_handoff_worker();
        let me = Arc::new(Mailbox {
            job: Mutex::new(None),
            ready: AtomicBool::new(false),
            thread: thread::current(),
        });
        let mut next = Some(first);
        while let Some(job) = next.take() {
            // Set once the worker has its next job in hand or is in the idle list: how long
            // it then waits for a job.
            let after = Cell::new(None);
            let back_to_idle = || {
                if after.get().is_none() {
                    after.set(Some(pool.after_job(&me)));
                }
            };
            // The job catches the future's panics; anything else is contained here so that
            // the worker lives on (the job's caller sees its channel close).
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&back_to_idle)));
            back_to_idle();
            next = pool.wait_for_job(&me, after.get().expect("set by back_to_idle"));
        }
    }

    /// What a worker does once its job's result is ready: it moves the queue's oldest job to
    /// its own mailbox, or joins the idle list if none is queued. Returns the idle time.
    fn after_job(&self, me: &Arc<Mailbox>) -> Duration {
        self.state.with(|state| {
            self.configure(state);
            match state.queue.pop_front() {
                Some((_, job)) => me.put(job),
                None => state.idle.push(Arc::clone(me)),
            }
            state.idle_time
        })
    }

    /// Waits in the idle list for a job; `None` once the worker has retired.
    fn wait_for_job(&self, me: &Arc<Mailbox>, idle_time: Duration) -> Option<Call> {
        let deadline = Instant::now() + idle_time;
        // ORDERING: Relaxed: only a hint that spares the spin a lock; the job itself is read
        // under the mailbox's mutex, which orders that read after the delivery.
        let ready = || me.ready.load(Ordering::Relaxed);
        loop {
            if let Some(job) = me.take() {
                return Some(job);
            }
            if thread::wait(ready, deadline) {
                // An idle worker means an empty queue (a job queues only while no worker is
                // idle, and a worker joins the list only while none is queued): retiring
                // strands nothing.
                let retired = self.state.with(|state| {
                    let position = state.idle.iter().position(|worker| Arc::ptr_eq(worker, me));
                    let retired = position.map(|position| state.idle.remove(position));
                    if retired.is_some() {
                        state.threads -= 1;
                    }
                    retired.is_some()
                });
                if retired {
                    return None;
                }
                // A caller took this worker from the idle list, and put its job in the mailbox
                // before it let go of the lock: the job is there.
                return Some(
                    me.take()
                        .expect("a caller delivers before letting go of the lock"),
                );
            }
        }
    }
}

impl Mailbox {
    /// Puts a job in the (empty) mailbox.
    fn put(&self, job: Call) {
        self.job.with(|slot| {
            debug_assert!(slot.is_none(), "one job at a time");
            *slot = Some(job);
            // ORDERING: Relaxed: a hint, written under the mailbox's mutex with the slot. The
            // worker that sees it then takes that mutex, which orders it after this critical
            // section (it read a value written in it), so it finds the job there.
            self.ready.store(true, Ordering::Relaxed);
        });
    }

    /// Takes the job out of the mailbox, if one is there.
    fn take(&self) -> Option<Call> {
        self.job.with(|slot| {
            let job = slot.take()?;
            // ORDERING: Relaxed: cleared under the mailbox's mutex, with the slot; the next
            // delivery sets it under the same mutex, after this critical section.
            self.ready.store(false, Ordering::Relaxed);
            Some(job)
        })
    }
}

/// Test hook for the loom models: the next `n` spawns of handoff workers made from this model
/// thread fail.
#[cfg(all(test, bridge_loom))]
pub(crate) fn loom_fail_spawns(n: usize) {
    thread::fail_spawns(n);
}

#[cfg(all(test, not(bridge_loom)))]
mod tests {
    use super::{Call, Pool};
    use std::sync::{Arc, mpsc};
    use std::time::{Duration, Instant};

    /// Waits (up to 10 s) until `done` holds.
    fn until(what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting: {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// A job that says it started, then holds its worker until its sender is used or dropped.
    fn held(started: &mpsc::Sender<()>) -> (Call, mpsc::Sender<()>) {
        let (release, hold) = mpsc::channel::<()>();
        let started = started.clone();
        let job: Call = Box::new(move |_| {
            started.send(()).unwrap();
            let _ = hold.recv();
        });
        (job, release)
    }

    #[test]
    fn the_peak_is_the_most_workers_alive_at_once() {
        let pool = Arc::new(Pool::new(2));
        pool.set_idle_time(Duration::from_millis(20));
        assert_eq!(pool.peak(), 0);
        let (started, has_started) = mpsc::channel();
        let releases: Vec<_> = (0..3)
            .map(|_| {
                let (job, release) = held(&started);
                Pool::submit(&pool, job);
                release
            })
            .collect();
        has_started.recv().unwrap();
        has_started.recv().unwrap();
        // Two workers at the cap, the third job queued.
        assert_eq!(pool.stats(), (2, 0, 1));
        assert_eq!(pool.peak(), 2);
        drop(releases);
        has_started.recv().unwrap();
        // Every job done: both workers idle, then retired; the peak stays.
        until("the workers retire", || pool.stats() == (0, 0, 0));
        assert_eq!(pool.peak(), 2);
        // One job at a time needs one worker: the peak does not move.
        let (job, release) = held(&started);
        Pool::submit(&pool, job);
        has_started.recv().unwrap();
        assert_eq!(pool.stats(), (1, 0, 0));
        drop(release);
        until("the worker retires", || pool.stats() == (0, 0, 0));
        assert_eq!(pool.peak(), 2);
    }
}
