//! The I/O side watches itself. Every poll of a future the bridge runs as a task of an I/O
//! runtime (`spawn_io`, `IoRuntime::spawn`, `stream::on_io`, `IoStore`'s calls and streams)
//! is timed into `IoMetrics::poll_durations`, and one that holds its worker past the
//! slow-poll threshold (`Config::slow_poll`) is named once, with the site of the user's
//! spawn: by the watcher while it still runs, or by its own thread when it returns.
//! [`watch`] puts a runtime of the user's under a probe: a small task the watcher wakes a few
//! times a second, whose lateness says how long the runtime's workers were held.
//!
//! Each thread that polls such futures has a slot (the poll in progress, if any) that only it
//! and the watcher lock; the watcher is one thread for the process, started with the first
//! slot or probe, that looks at every slot and probe each [`TICK`]. A poll costs two clock
//! reads, two uncontended locks of its thread's slot and one relaxed increment; nothing is
//! shared between the I/O workers.

use crate::metrics;
use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
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

/// A poll in progress on one thread.
struct Running {
    started: Instant,
    site: &'static Location<'static>,
    /// Named already (by the watcher): its end does not name it again.
    reported: bool,
}

/// One thread's poll in progress, shared with the watcher.
#[derive(Default)]
struct Slot(Mutex<Option<Running>>);

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
                loop {
                    std::thread::sleep(TICK);
                    look(Instant::now(), bridge_core::__config::slow_poll());
                }
            });
    });
}

/// Times `poll`, one poll of a future spawned at `site`, and names it if it runs long.
pub(crate) fn poll<R>(site: &'static Location<'static>, poll: impl FnOnce() -> R) -> R {
    let started = Instant::now();
    let watched = SLOT
        .try_with(|slot| {
            *lock(&slot.0) = Some(Running {
                started,
                site,
                reported: false,
            });
        })
        .is_ok();
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
            SLOT.try_with(|slot| lock(&slot.0).take()).ok().flatten()
        } else {
            None
        };
        let slow = bridge_core::__config::slow_poll();
        if let Some(running) = running.filter(|running| !running.reported && took >= slow) {
            slow_poll(running.site, took, false);
        }
    }
}

/// Names a poll that held its worker `held` (so far, when it is `still_running`).
#[cold]
fn slow_poll(site: &'static Location<'static>, held: Duration, still_running: bool) {
    metrics::slow_poll();
    #[cfg(not(feature = "tracing"))]
    let _ = (site, held, still_running);
    #[cfg(feature = "tracing")]
    tracing::warn!(
        %site,
        ?held,
        still_running,
        "bridge: a poll of a future spawned at {site} has held an I/O worker for {held:?}: \
         CPU work (a decode, a parse, compression) or a blocking call runs on the I/O side, \
         and every other task of that worker waits meanwhile. Move the CPU work to \
         bridge::spawn or bridge::cpu::spawn_future, and blocking calls to \
         tokio::task::spawn_blocking"
    );
}

/// One look of the watcher at `now`: names the polls in progress past `slow`, wakes the
/// probes that are due, names those still not run past `slow`, and forgets what is gone.
fn look(now: Instant, slow: Duration) {
    let (slots, probes) = {
        let mut watched = lock(&WATCHED);
        watched.slots.retain(|slot| slot.strong_count() > 0);
        watched.probes.retain(|probe| probe.strong_count() > 0);
        (watched.slots.clone(), watched.probes.clone())
    };
    if slow != Duration::MAX {
        for slot in slots.iter().filter_map(Weak::upgrade) {
            let mut running = lock(&slot.0);
            if let Some(running) = running.as_mut().filter(|running| !running.reported) {
                let held = now.saturating_duration_since(running.started);
                if held >= slow {
                    running.reported = true;
                    slow_poll(running.site, held, true);
                }
            }
        }
    }
    for probe in probes.iter().filter_map(Weak::upgrade) {
        probe.look(now, slow);
    }
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
    /// The current wake-up was named already.
    reported: bool,
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
                    state.reported = true;
                    held_runtime(held);
                }
            }
            None if now.saturating_duration_since(state.ran) >= PROBE_PERIOD => {
                state.woken = Some(now);
                state.reported = false;
                if let Some(waker) = state.waker.clone() {
                    drop(state);
                    waker.wake();
                }
            }
            None => {}
        }
    }
}

/// Names a watched runtime whose workers were held `held` (so far, if the probe has not run).
#[cold]
fn held_runtime(held: Duration) {
    metrics::held_runtime();
    #[cfg(not(feature = "tracing"))]
    let _ = held;
    #[cfg(feature = "tracing")]
    tracing::warn!(
        ?held,
        "bridge::rt::watch: a watched runtime has not run a task woken {held:?} ago: its \
         workers are held by polls that do not return (CPU work, a blocking call or a sync \
         wait inline in a task). Move CPU work to bridge::spawn or bridge::cpu::spawn_future, \
         and blocking calls to tokio::task::spawn_blocking"
    );
}

/// The probe's task: runs each time the watcher wakes it, and says how late it ran.
struct ProbeTask(Arc<Probe>);

impl Future for ProbeTask {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let now = Instant::now();
        let slow = bridge_core::__config::slow_poll();
        let mut state = lock(&self.0.state);
        if let Some(woken) = state.woken.take() {
            let late = now.saturating_duration_since(woken);
            if !state.reported && late >= slow {
                held_runtime(late);
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
        let mut state = lock(&self.0.state);
        state.stopped = true;
        state.waker = None;
    }
}

/// Puts the runtime of `handle` under watch: a probe task on it, which the bridge's watcher
/// thread wakes a few times a second. When the runtime runs the probe later than the
/// slow-poll threshold (`bridge::configure().slow_poll`, 10 ms by default), its workers were
/// held that long by polls that do not return (CPU work, a blocking call or a sync wait
/// inline in a task), and every other task of the runtime waited as long: the bridge says so
/// once per wake-up, while the runtime is still held, with a warning (feature `tracing`) and
/// a count in `bridge::metrics().io.held_runtimes`.
///
/// The watch ends when the returned [`Watch`] is dropped, or when the runtime shuts down (its
/// probe task goes with it). It costs the runtime one short task poll per wake-up. A
/// current-thread runtime that is not driven (no `block_on` running) counts as held.
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
            waker: None,
            stopped: false,
        }),
    });
    lock(&WATCHED).probes.push(Arc::downgrade(&probe));
    start_watcher();
    let task = handle.spawn(ProbeTask(Arc::clone(&probe)));
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
