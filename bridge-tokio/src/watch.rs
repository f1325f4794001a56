//! The I/O side watches itself. Every poll of a future the bridge runs as a task of an I/O
//! runtime (`spawn_io`, `IoRuntime::spawn`, `stream::on_io`, `IoStore`'s calls and streams)
//! is timed into `IoMetrics::poll_durations`, and one that holds its worker past the
//! slow-poll threshold (`Config::slow_poll`) is named once, with the site of the user's
//! spawn: by the watcher while it still runs, or by its own thread when it returns.
//! [`watch`] puts a runtime of the user's under a probe: a small task the watcher wakes a few
//! times a second, whose lateness says how long the runtime's workers were held.
//!
//! Each thread that polls such futures has a slot (the poll in progress, if any, and a count
//! of its polls) that only it and the watcher lock; the watcher is one thread for the process,
//! started with the first slot or probe, that looks at every slot and probe each [`TICK`]. A
//! poll costs two clock reads, two uncontended locks of its thread's slot, one relaxed
//! increment and one relaxed load of a flag that changes only when the watcher sleeps or
//! wakes; nothing is written that the I/O workers share.
//!
//! The watcher sleeps (parked, no wake-up at all) when there is nothing to look at: the
//! threshold is `Duration::MAX` (the watch is off), or no probe is alive and no poll has run
//! for [`IDLE_AFTER`]. The next poll that starts while the threshold is finite, and the next
//! [`watch`], wake it. (A watch made while the threshold is off starts probing at the first
//! such poll or watch after the threshold is set.)

use crate::metrics;
use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use tokio::task::AbortHandle;

/// How often the watcher looks at the polls in progress and the probes: a poll that never
/// returns is named at most this long after it passed the threshold.
const TICK: Duration = Duration::from_millis(100);

/// How often the watcher wakes each probe (a few times a second).
const PROBE_PERIOD: Duration = Duration::from_millis(250);

/// How long the watcher goes on looking after the last poll it saw, with no probe alive.
const IDLE_AFTER: Duration = Duration::from_secs(1);

/// How long a woken probe may go unrun before the watcher names its runtime as still held
/// (a poll that never returns); a probe that runs sooner is named when it runs, with the
/// whole wait of the work woken beside it.
const STILL_HELD: Duration = Duration::from_secs(1);

/// The watcher is parked (or about to park) until a poll or a watch wakes it.
static ASLEEP: AtomicBool = AtomicBool::new(false);

/// The watcher thread, to unpark it.
static WATCHER: OnceLock<std::thread::Thread> = OnceLock::new();

/// A poll in progress on one thread.
struct Running {
    started: Instant,
    site: Site,
    /// Named already (by the watcher): its end does not name it again.
    reported: bool,
}

/// One thread's poll in progress, and how many polls it started, shared with the watcher.
#[derive(Default)]
struct Slot(Mutex<SlotState>);

#[derive(Default)]
struct SlotState {
    running: Option<Running>,
    /// Polls started on this thread: the watcher sees from it that the I/O side ran.
    polls: u64,
}

/// What the watcher looks at: every thread's slot and every probe, while they live.
#[derive(Default)]
struct Watched {
    slots: Vec<Weak<Slot>>,
    probes: Vec<Weak<Probe>>,
}

static WATCHED: Mutex<Watched> = Mutex::new(Watched {
    slots: Vec::new(),
    probes: Vec::new(),
});

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding one of these locks.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

thread_local! {
    static SLOT: Arc<Slot> = {
        let slot = Arc::new(Slot::default());
        lock(&WATCHED).slots.push(Arc::downgrade(&slot));
        start_watcher();
        slot
    };
}

/// Starts the watcher thread, once per process. A thread that cannot be started leaves the
/// polls timed and named when they return, and no probe woken.
fn start_watcher() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let _ = std::thread::Builder::new()
            .name("bridge-watch".into())
            .spawn(|| {
                let mut seen = Seen::default();
                loop {
                    std::thread::sleep(TICK);
                    let now = Instant::now();
                    let slow = crate::settings::slow_poll();
                    if slow == Duration::MAX {
                        // The watch is off: nothing to name, no probe to wake.
                        sleep_until_woken(&mut seen);
                    } else if look(now, slow, &mut seen) {
                        seen.active = now;
                    } else if now.saturating_duration_since(seen.active) >= IDLE_AFTER {
                        sleep_until_woken(&mut seen);
                    }
                }
            })
            .map(|watcher| WATCHER.set(watcher.thread().clone()));
    });
}

/// What the watcher saw in its last look: the polls started on every thread, and when it
/// last saw the I/O side busy.
struct Seen {
    polls: u64,
    active: Instant,
}

impl Default for Seen {
    fn default() -> Self {
        Self {
            polls: 0,
            active: Instant::now(),
        }
    }
}

/// Parks the watcher until a poll or a watch wakes it, unless one came in the meantime.
///
/// The flag is raised first and the slots and probes looked at after, each under its lock: a
/// poll that starts later takes its slot's lock after the watcher's look released it, so it
/// sees the flag raised and wakes the watcher; one that started earlier is in the look.
fn sleep_until_woken(seen: &mut Seen) {
    // ORDERING: Relaxed: the slot and `WATCHED` locks taken by the look below and by each
    // poll and watch order this store before their load (see above); the flag publishes
    // nothing else.
    ASLEEP.store(true, Ordering::Relaxed);
    let slow = crate::settings::slow_poll();
    let busy = slow != Duration::MAX && {
        let polls = seen.polls;
        let busy_now = look(Instant::now(), slow, seen);
        busy_now || seen.polls != polls
    };
    if busy {
        // ORDERING: Relaxed: only this thread acts on the flag being down.
        ASLEEP.store(false, Ordering::Relaxed);
        return;
    }
    // ORDERING: Relaxed: a waker lowers the flag before it unparks this thread, and an
    // unpark that comes before the park makes it return at once; a spurious return loops.
    while ASLEEP.load(Ordering::Relaxed) {
        std::thread::park();
    }
    seen.active = Instant::now();
}

/// Wakes the watcher if it sleeps and the watch is on: a poll started, or a new watch.
fn wake_watcher() {
    // ORDERING: Relaxed: see `sleep_until_woken`. The swap elects one waker.
    if ASLEEP.load(Ordering::Relaxed)
        && crate::settings::slow_poll() != Duration::MAX
        && ASLEEP.swap(false, Ordering::Relaxed)
    {
        if let Some(watcher) = WATCHER.get() {
            watcher.unpark();
        }
    }
}

/// Where a watched future comes from, to name it.
#[derive(Clone, Copy)]
#[cfg_attr(
    not(feature = "tracing"),
    expect(
        dead_code,
        reason = "named only in the warnings of the feature `tracing`"
    )
)]
pub(crate) enum Site {
    /// Spawned on the I/O side by the bridge (`spawn_io`, `IoRuntime::spawn`, `on_io`).
    Spawned(&'static Location<'static>),
    /// Wrapped by the user in [`watched`].
    Watched(&'static Location<'static>),
}

/// Times `poll`, one poll of a future spawned at `site`, and names it if it runs long.
pub(crate) fn poll<R>(site: &'static Location<'static>, poll: impl FnOnce() -> R) -> R {
    timed(Site::Spawned(site), poll)
}

/// Times `poll`, one poll of the future from `site`, and names it if it runs long.
fn timed<R>(site: Site, poll: impl FnOnce() -> R) -> R {
    let started = Instant::now();
    let watched = SLOT
        .try_with(|slot| {
            let mut state = lock(&slot.0);
            state.running = Some(Running {
                started,
                site,
                reported: false,
            });
            state.polls += 1;
        })
        .is_ok();
    // ORDERING: Relaxed: see `sleep_until_woken`; the slot's lock above orders this load
    // after a sleeping watcher's store.
    if ASLEEP.load(Ordering::Relaxed) {
        wake_watcher();
    }
    // Ends the poll however it ends (the caller catches a panic, but a guard costs nothing).
    let _end = End { started, watched };
    poll()
}

/// The end of a watched poll.
struct End {
    started: Instant,
    watched: bool,
}

impl Drop for End {
    fn drop(&mut self) {
        let took = self.started.elapsed();
        metrics::polled(took);
        let running = if self.watched {
            SLOT.try_with(|slot| lock(&slot.0).running.take())
                .ok()
                .flatten()
        } else {
            None
        };
        let slow = crate::settings::slow_poll();
        if let Some(running) = running.filter(|running| !running.reported && took >= slow) {
            slow_poll(running.site, took, false);
        }
    }
}

/// Names a poll that held its worker `held` (so far, when it is `still_running`).
#[cold]
fn slow_poll(site: Site, held: Duration, still_running: bool) {
    metrics::slow_poll();
    #[cfg(not(feature = "tracing"))]
    let _ = (site, held, still_running);
    #[cfg(feature = "tracing")]
    match site {
        Site::Spawned(site) => tracing::warn!(
            target: "bridge",
            %site,
            ?held,
            still_running,
            "a poll of a future spawned at {site} has held an I/O worker for {held:?}: \
             CPU work (a decode, a parse, compression) or a blocking call runs on the I/O \
             side, and every other task of that worker waits meanwhile. Move the CPU work to \
             bridge::spawn or bridge::cpu::spawn_future, and blocking calls to \
             tokio::task::spawn_blocking"
        ),
        Site::Watched(site) => tracing::warn!(
            target: "bridge",
            %site,
            ?held,
            still_running,
            "a poll of the future watched at {site} (bridge::rt::watched) has held \
             its runtime's worker for {held:?}: CPU work (a decode, a parse, compression) or \
             a blocking call runs inline in that task, and every other task of that worker \
             waits meanwhile. Move the CPU work to bridge::spawn or \
             bridge::cpu::spawn_future, and blocking calls to tokio::task::spawn_blocking"
        ),
    }
}

/// Wraps `future` so that each of its polls is timed as the bridge times the polls of the
/// futures it runs on the I/O side: into `bridge::metrics().io.poll_durations`, and a poll
/// that holds its thread past the slow-poll threshold (`bridge::configure().slow_poll`, 10 ms
/// by default) is counted in `bridge::metrics().io.slow_polls` and named once, with the file
/// and line of this call (feature `tracing`, a warning that gives the remedy): while it still
/// runs (by the bridge's watcher thread) or when it returns.
///
/// For the futures of your own runtime that [`watch`] says are held: a handler, a
/// connection's task. Wrap each where it is made, and the warning names the one that holds
/// the workers. It runs on any runtime or executor and changes nothing else of the future:
/// same output, same wake-ups, its panics pass through, dropped with it.
///
/// Each poll costs what the bridge's own I/O-side polls cost: two clock reads, two
/// uncontended locks of a slot of the polling thread's own, a relaxed increment of a
/// per-thread counter and a relaxed load; a small fraction of a microsecond, next to a poll
/// of a handler that does any I/O. `Duration::MAX` as the threshold stops the naming, not the
/// timing.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// bridge::configure().slow_poll(Duration::from_millis(20)).apply();
/// let rt = tokio::runtime::Runtime::new().unwrap();
/// let before = bridge::metrics().io.slow_polls;
/// let hash = rt.spawn(bridge::rt::watched(async {
///     // CPU work inline in a handler: its worker is held for 50 ms, and this line is named.
///     std::thread::sleep(Duration::from_millis(50));
///     "digest"
/// }));
/// assert_eq!(rt.block_on(hash).unwrap(), "digest");
/// assert!(bridge::metrics().io.slow_polls > before);
/// ```
#[track_caller]
pub fn watched<F: Future>(future: F) -> impl Future<Output = F::Output> {
    let site = Site::Watched(Location::caller());
    async move {
        let mut future = std::pin::pin!(future);
        std::future::poll_fn(|cx| timed(site, || future.as_mut().poll(cx))).await
    }
}

/// One look of the watcher at `now`: names the polls in progress past `slow`, wakes the
/// probes that are due, names those still not run past `slow`, and forgets what is gone.
/// Returns whether there was anything to watch: a poll in progress or started since the last
/// look (`seen` is updated), or a probe alive.
fn look(now: Instant, slow: Duration, seen: &mut Seen) -> bool {
    let (slots, probes) = {
        let mut watched = lock(&WATCHED);
        watched.slots.retain(|slot| slot.strong_count() > 0);
        watched.probes.retain(|probe| probe.strong_count() > 0);
        (watched.slots.clone(), watched.probes.clone())
    };
    let (mut polls, mut running_now) = (0, false);
    for slot in slots.iter().filter_map(Weak::upgrade) {
        let mut state = lock(&slot.0);
        polls += state.polls;
        running_now |= state.running.is_some();
        if slow == Duration::MAX {
            continue;
        }
        if let Some(running) = state.running.as_mut().filter(|running| !running.reported) {
            let held = now.saturating_duration_since(running.started);
            if held >= slow {
                running.reported = true;
                slow_poll(running.site, held, true);
            }
        }
    }
    let mut probed = false;
    for probe in probes.iter().filter_map(Weak::upgrade) {
        probed = true;
        probe.look(now, slow);
    }
    let ran = polls != seen.polls;
    seen.polls = polls;
    ran || running_now || probed
}

/// A watched runtime's probe, shared by its task, its [`Watch`] and the watcher.
struct Probe {
    state: Mutex<ProbeState>,
}

struct ProbeState {
    /// When the watcher last woke the probe, until the probe runs.
    woken: Option<Instant>,
    /// When the probe last ran.
    ran: Instant,
    /// The current wake-up was counted as held already.
    reported: bool,
    /// The current wake-up was named in a warning already.
    warned: bool,
    /// The probe task's waker.
    waker: Option<Waker>,
    /// The probe task is gone (its runtime shut down, or the watch was dropped).
    stopped: bool,
}

impl Probe {
    /// The watcher's look: a probe woken and not run past `slow` is named while its runtime
    /// is held; one due is woken.
    fn look(&self, now: Instant, slow: Duration) {
        let mut state = lock(&self.state);
        if state.stopped {
            return;
        }
        match state.woken {
            Some(woken) => {
                let held = now.saturating_duration_since(woken);
                if !state.reported && held >= slow {
                    // Counted now; named when the probe runs, with the whole wait, or here
                    // if the runtime stays held (a poll that never returns).
                    state.reported = true;
                    metrics::held_runtime();
                }
                if state.reported && !state.warned && held >= STILL_HELD.max(slow) {
                    state.warned = true;
                    held_runtime(held, true);
                }
            }
            None if now.saturating_duration_since(state.ran) >= PROBE_PERIOD => {
                state.woken = Some(now);
                state.reported = false;
                state.warned = false;
                if let Some(waker) = state.waker.clone() {
                    drop(state);
                    waker.wake();
                }
            }
            None => {}
        }
    }
}

/// Names a watched runtime on which a woken task waited `held` before it ran (`still`: has
/// waited so far, and has not run yet).
#[cold]
fn held_runtime(held: Duration, still: bool) {
    #[cfg(not(feature = "tracing"))]
    let _ = (held, still);
    #[cfg(feature = "tracing")]
    if still {
        tracing::warn!(
            target: "bridge",
            ?held,
            "bridge::rt::watch: a watched runtime has not run a task woken {held:?} ago: its \
             workers are held by polls that do not return (CPU work, a blocking call or a \
             sync wait inline in a task). Wrap its handlers in bridge::rt::watched to name \
             the one that holds them; move CPU work to bridge::spawn or \
             bridge::cpu::spawn_future, and blocking calls to tokio::task::spawn_blocking"
        );
    } else {
        tracing::warn!(
            target: "bridge",
            ?held,
            "bridge::rt::watch: work woken on a watched runtime (a socket's reader, a timer) \
             waited {held:?} for the runtime to turn its I/O driver: its workers were held by polls that did not return (CPU work, a blocking call or a \
             sync wait inline in a task). Wrap its handlers in bridge::rt::watched to name \
             the one that holds them; move CPU work to bridge::spawn or \
             bridge::cpu::spawn_future, and blocking calls to tokio::task::spawn_blocking"
        );
    }
}

/// The probe's task: each time the watcher wakes it, it waits for the runtime's next turn of
/// its I/O driver (a `yield_now`, which tokio defers until then), and says how late that came.
/// A task woken from another thread is run soon even on a held runtime (tokio looks at its
/// queue of such tasks after every poll once polls run long), but a socket's readiness and a
/// timer reach their tasks only when a worker turns the driver (when it parks, or every few
/// dozen polls): the turn is the delay that work woken on the runtime sees.
struct ProbeTask {
    probe: Arc<Probe>,
    /// The wait for the driver's turn, while one is under way.
    turn: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl Future for ProbeTask {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        if this.turn.is_none() && lock(&this.probe.state).woken.is_some() {
            this.turn = Some(Box::pin(tokio::task::yield_now()));
        }
        if let Some(turn) = this.turn.as_mut() {
            if turn.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.turn = None;
        }
        let now = Instant::now();
        let slow = crate::settings::slow_poll();
        let mut state = lock(&this.probe.state);
        if let Some(woken) = state.woken.take() {
            let late = now.saturating_duration_since(woken);
            if late >= slow {
                if !state.reported {
                    state.reported = true;
                    metrics::held_runtime();
                }
                if !state.warned {
                    state.warned = true;
                    held_runtime(late, false);
                }
            }
            state.ran = now;
        }
        match &state.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => state.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl Drop for ProbeTask {
    fn drop(&mut self) {
        let mut state = lock(&self.probe.state);
        state.stopped = true;
        state.waker = None;
    }
}

/// Puts the runtime of `handle` under watch: a probe task on it, which the bridge's watcher
/// thread wakes a few times a second. When the runtime runs the probe later than the
/// slow-poll threshold (`bridge::configure().slow_poll`, 10 ms by default), its workers were
/// held that long by polls that do not return (CPU work, a blocking call or a sync wait
/// inline in a task), and every other task woken on the runtime (a socket's reader, a timer)
/// waited about as long. The bridge counts it in `bridge::metrics().io.held_runtimes` once
/// per wake-up, while the runtime is still held, and names it with a warning (feature
/// `tracing`) that says how long the probe waited once it runs: the delay your own woken work
/// saw. A probe still not run after a second is named then, as still held. To learn which
/// task holds the workers, wrap its future in [`watched`].
///
/// The watch ends when the returned [`Watch`] is dropped, or when the runtime shuts down (its
/// probe task goes with it). It costs the runtime one short task poll per wake-up. A
/// current-thread runtime that is not driven (no `block_on` running) counts as held.
///
/// The watcher is one thread for the process (`bridge-watch`). It sleeps, with no wake-up at
/// all, while the threshold is `Duration::MAX` (the watch is off), and once no watch is alive
/// and nothing has run on the I/O side for a second; the next watch, or the next poll on the
/// I/O side, wakes it.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let _watch = bridge::rt::watch(rt.handle());
/// let before = bridge::metrics().io.held_runtimes;
/// rt.block_on(async {
///     // A decode left inline on the runtime: its worker is held for 600 ms.
///     std::thread::sleep(Duration::from_millis(600));
/// });
/// assert!(bridge::metrics().io.held_runtimes > before);
/// ```
#[must_use = "the watch ends when it is dropped"]
pub fn watch(handle: &Handle) -> Watch {
    let probe = Arc::new(Probe {
        state: Mutex::new(ProbeState {
            woken: None,
            ran: Instant::now(),
            reported: false,
            warned: false,
            waker: None,
            stopped: false,
        }),
    });
    lock(&WATCHED).probes.push(Arc::downgrade(&probe));
    start_watcher();
    wake_watcher();
    let task = handle.spawn(ProbeTask {
        probe: Arc::clone(&probe),
        turn: None,
    });
    Watch {
        probe,
        task: task.abort_handle(),
    }
}

/// A runtime under watch, from [`watch`]: the watch ends when this is dropped.
///
/// # Examples
///
/// ```
/// let rt = tokio::runtime::Runtime::new().unwrap();
/// let watch = bridge::rt::watch(rt.handle());
/// println!("{watch:?}");
/// drop(watch); // the probe task is aborted
/// ```
pub struct Watch {
    probe: Arc<Probe>,
    task: AbortHandle,
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.task.abort();
        lock(&self.probe.state).stopped = true;
    }
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = lock(&self.probe.state);
        f.debug_struct("Watch")
            .field("stopped", &state.stopped)
            .field("waiting_for_the_runtime", &state.woken.is_some())
            .finish()
    }
}
