//! The process's settings: one builder, one snapshot.
//! The hidden accessors are used by bridge-tokio (the handoff pool's cap and keep-alive,
//! the stall and slow-poll thresholds).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

/// The bridge's settings for this process: [`configure()`] gives the settings in force,
/// to read in its fields, or to change and [`apply`](Self::apply).
///
/// Each field is documented with its default. A setting applies from the next operation
/// that reads it (the next handoff thread started or retired, the next wait that may
/// stall, the next poll on rayon); work under way keeps what it read.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// // At start-up: fewer handoff threads, a louder stall warning.
/// bridge::configure()
///     .handoff_threads(64)
///     .stall_warning(Duration::from_secs(1))
///     .apply();
///
/// let now = bridge::configure();
/// assert_eq!(now.handoff_threads, 64);
/// assert_eq!(now.stall_warning, Duration::from_secs(1));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
#[must_use = "a Config changes nothing until .apply()"]
pub struct Config {
    /// The most threads the handoff pool keeps at once (at least 1; default 512, tokio's
    /// default for its blocking pool). A `run_blocking` call that finds none free at the cap
    /// waits for the first to finish. Calls made on a handoff thread never wait for one.
    pub handoff_threads: usize,
    /// How long an idle handoff thread waits for its next call before it ends (default
    /// 10 s, as tokio's blocking threads).
    pub handoff_keep_alive: Duration,
    /// How long a wait may last before the bridge says why it may never end (default 5 s;
    /// `Duration::MAX` is off): a `run_blocking` call on a current-thread runtime whose
    /// handed-off future has not finished, or a wait from outside rayon for a task still
    /// queued. Each logs one warning (feature `tracing`) naming the cause and the remedy and
    /// counts in [`bridge::metrics()`](https://docs.rs/threadbridge/latest/bridge/fn.metrics.html)
    /// (`io.stalled_handoffs`, `cpu.stalled_waits`). Nothing is cancelled.
    pub stall_warning: Duration,
    /// Whether the bridge's polls on rayon (`cpu::spawn_future`, the CPU side of streams)
    /// yield their thread's CPU after a poll that ran long, so that the threads of the
    /// process's other work get it sooner (default `false`: the bridge leaves the scheduling
    /// of every thread as it found it).
    pub yield_after_long_polls: bool,
    /// How long one poll may hold an I/O worker before the bridge names it (default 10 ms;
    /// `Duration::MAX` is off): a poll of a future the bridge runs on the I/O side
    /// (`bridge::spawn_io`, `IoRuntime::spawn`, `stream::on_io`, `IoStore`) that runs this
    /// long, or a runtime under `bridge::rt::watch` that schedules a small task this late,
    /// is reported once, while it holds the worker: a warning (feature `tracing`) with the
    /// spawn site and the remedy, and a count in `bridge::metrics().io`.
    pub slow_poll: Duration,
}

/// The default cap on handoff threads.
const HANDOFF_THREADS: usize = 512;
/// The default keep-alive of an idle handoff thread.
const HANDOFF_KEEP_ALIVE: Duration = Duration::from_secs(10);
/// The default stall warning.
const STALL_WARNING: Duration = Duration::from_secs(5);
/// The default slow-poll threshold.
const SLOW_POLL: Duration = Duration::from_millis(10);

// Each is a setting read on its own; nothing else is published with it.
static THREADS: AtomicUsize = AtomicUsize::new(HANDOFF_THREADS);
static KEEP_ALIVE: AtomicU64 = AtomicU64::new(HANDOFF_KEEP_ALIVE.as_secs() * 1_000_000_000);
static STALL: AtomicU64 = AtomicU64::new(STALL_WARNING.as_secs() * 1_000_000_000);
static YIELD: AtomicBool = AtomicBool::new(false);
static SLOW: AtomicU64 = AtomicU64::new(SLOW_POLL.as_millis() as u64 * 1_000_000);

/// The settings in force: read them in its fields, or change them and
/// [`apply`](Config::apply) them.
///
/// # Examples
///
/// ```
/// let now = bridge::configure();
/// println!("bridge settings: {now:?}");
/// bridge::configure().yield_after_long_polls(true).apply();
/// assert!(bridge::configure().yield_after_long_polls);
/// # now.apply();
/// ```
pub fn configure() -> Config {
    Config {
        handoff_threads: handoff_threads(),
        handoff_keep_alive: handoff_keep_alive(),
        stall_warning: stall_warning(),
        yield_after_long_polls: yield_after_long_polls(),
        slow_poll: slow_poll(),
    }
}

impl Config {
    /// Sets [`handoff_threads`](Self#structfield.handoff_threads) (0 counts as 1).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = bridge::configure().handoff_threads(0);
    /// assert_eq!(config.handoff_threads, 1);
    /// ```
    pub fn handoff_threads(mut self, threads: usize) -> Self {
        self.handoff_threads = threads.max(1);
        self
    }

    /// Sets [`handoff_keep_alive`](Self#structfield.handoff_keep_alive).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = bridge::configure().handoff_keep_alive(std::time::Duration::from_secs(1));
    /// assert_eq!(config.handoff_keep_alive.as_secs(), 1);
    /// ```
    pub fn handoff_keep_alive(mut self, keep_alive: Duration) -> Self {
        self.handoff_keep_alive = keep_alive;
        self
    }

    /// Sets [`stall_warning`](Self#structfield.stall_warning); `Duration::MAX` turns it off.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = bridge::configure().stall_warning(std::time::Duration::MAX);
    /// assert_eq!(config.stall_warning, std::time::Duration::MAX);
    /// ```
    pub fn stall_warning(mut self, threshold: Duration) -> Self {
        self.stall_warning = threshold;
        self
    }

    /// Sets [`yield_after_long_polls`](Self#structfield.yield_after_long_polls).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = bridge::configure().yield_after_long_polls(true);
    /// assert!(config.yield_after_long_polls);
    /// ```
    pub fn yield_after_long_polls(mut self, on: bool) -> Self {
        self.yield_after_long_polls = on;
        self
    }

    /// Sets [`slow_poll`](Self#structfield.slow_poll); `Duration::MAX` turns the watch off.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = bridge::configure().slow_poll(std::time::Duration::from_millis(50));
    /// assert_eq!(config.slow_poll.as_millis(), 50);
    /// ```
    pub fn slow_poll(mut self, threshold: Duration) -> Self {
        self.slow_poll = threshold;
        self
    }

    /// Makes these the settings of the process.
    ///
    /// # Examples
    ///
    /// ```
    /// let before = bridge::configure();
    /// bridge::configure().handoff_threads(8).apply();
    /// assert_eq!(bridge::configure().handoff_threads, 8);
    /// before.apply();
    /// ```
    pub fn apply(self) {
        // ORDERING: Relaxed: a setting, read on its own.
        THREADS.store(self.handoff_threads.max(1), Relaxed);
        // ORDERING: Relaxed: a setting, read on its own.
        KEEP_ALIVE.store(nanos(self.handoff_keep_alive), Relaxed);
        // ORDERING: Relaxed: a setting, read on its own.
        STALL.store(nanos(self.stall_warning), Relaxed);
        // ORDERING: Relaxed: a setting, read on its own.
        YIELD.store(self.yield_after_long_polls, Relaxed);
        // ORDERING: Relaxed: a setting, read on its own.
        SLOW.store(nanos(self.slow_poll), Relaxed);
    }
}

/// `u64::MAX` stands for `Duration::MAX` (and any duration too long for it).
fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

fn duration(nanos: u64) -> Duration {
    match nanos {
        u64::MAX => Duration::MAX,
        nanos => Duration::from_nanos(nanos),
    }
}

/// The cap on handoff threads. Used by bridge-tokio.
pub fn handoff_threads() -> usize {
    // ORDERING: Relaxed: a setting, read on its own.
    THREADS.load(Relaxed)
}

/// The keep-alive of idle handoff threads. Used by bridge-tokio.
pub fn handoff_keep_alive() -> Duration {
    // ORDERING: Relaxed: a setting, read on its own.
    duration(KEEP_ALIVE.load(Relaxed))
}

/// The stall threshold. Used by bridge-tokio (and this crate's `Task`).
pub fn stall_warning() -> Duration {
    // ORDERING: Relaxed: a setting, read on its own.
    duration(STALL.load(Relaxed))
}

/// The slow-poll threshold. Used by bridge-tokio (the I/O side's watch).
pub fn slow_poll() -> Duration {
    // ORDERING: Relaxed: a setting, read on its own.
    duration(SLOW.load(Relaxed))
}

/// Whether polls on rayon yield after a long one. Used by this crate's courtesy.
pub(crate) fn yield_after_long_polls() -> bool {
    // ORDERING: Relaxed: a setting, read on its own.
    YIELD.load(Relaxed)
}
