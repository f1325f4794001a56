//! The process's settings, gathered from the crates of the family that keep them.

use std::time::Duration;

/// The bridge's settings for this process: [`configure()`] gives the settings in force,
/// to read in its fields, or to change and [`apply`](Self::apply).
///
/// Each field is documented with its default. A setting applies from the next operation
/// that reads it (the next handoff thread started or retired, the next wait that may
/// stall, the next poll on rayon); work under way keeps what it read. The settings of a
/// half are there with its feature (`tokio`, `rayon`).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// // At start-up: a louder stall warning.
/// bridge::configure().stall_warning(Duration::from_secs(1)).apply();
/// assert_eq!(bridge::configure().stall_warning, Duration::from_secs(1));
/// # bridge::configure().stall_warning(Duration::from_secs(5)).apply();
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
#[must_use = "a Config changes nothing until .apply()"]
pub struct Config {
    /// How long a wait may last before the bridge says why it may never end (default 5 s;
    /// `Duration::MAX` is off): a `run_blocking` call on a current-thread runtime whose
    /// handed-off future has not finished, a wait from outside rayon for a task still
    /// queued, or a rayon worker waiting for work that may be queued behind it. Each logs
    /// one warning (feature `tracing`) naming the cause and the remedy and counts in
    /// [`metrics()`](crate::metrics) (`io.stalled_handoffs`, `cpu.stalled_waits`). Nothing
    /// is cancelled.
    pub stall_warning: Duration,
    /// The most threads the handoff pool keeps at once (at least 1; default 512, tokio's
    /// default for its blocking pool). A `run_blocking` call that finds none free at the cap
    /// waits for the first to finish. Calls made on a handoff thread never wait for one.
    #[cfg(feature = "tokio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    pub handoff_threads: usize,
    /// How long an idle handoff thread waits for its next call before it ends (default
    /// 10 s, as tokio's blocking threads).
    #[cfg(feature = "tokio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    pub handoff_keep_alive: Duration,
    /// How long one poll may hold an I/O worker before the bridge names it (default 10 ms;
    /// `Duration::MAX` is off): a poll of a future the bridge runs on the I/O side
    /// (`bridge::spawn_io`, `IoRuntime::spawn`, `stream::on_io`, `IoStore`) that runs this
    /// long, or a runtime under `bridge::rt::watch` that schedules a small task this late,
    /// is reported once, while it holds the worker: a warning (feature `tracing`) with the
    /// spawn site and the remedy, and a count in `bridge::metrics().io`.
    #[cfg(feature = "tokio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    pub slow_poll: Duration,
    /// Whether the bridge's polls on rayon (`cpu::spawn_future`, the CPU side of streams)
    /// yield their thread's CPU after a poll that ran long, so that the threads of the
    /// process's other work get it sooner (default `false`: the bridge leaves the scheduling
    /// of every thread as it found it).
    #[cfg(feature = "rayon")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rayon")))]
    pub yield_after_long_polls: bool,
}

/// The settings in force: read them in its fields, or change them and
/// [`apply`](Config::apply) them.
///
/// # Examples
///
/// ```
/// let now = bridge::configure();
/// println!("bridge settings: {now:?}");
/// ```
pub fn configure() -> Config {
    Config {
        stall_warning: bridge_core::settings::stall_warning(),
        #[cfg(feature = "tokio")]
        handoff_threads: bridge_tokio::settings::handoff_threads(),
        #[cfg(feature = "tokio")]
        handoff_keep_alive: bridge_tokio::settings::handoff_keep_alive(),
        #[cfg(feature = "tokio")]
        slow_poll: bridge_tokio::settings::slow_poll(),
        #[cfg(feature = "rayon")]
        yield_after_long_polls: bridge_rayon::settings::yield_after_long_polls(),
    }
}

impl Config {
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

    /// Sets [`handoff_threads`](Self#structfield.handoff_threads) (0 counts as 1).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = bridge::configure().handoff_threads(0);
    /// assert_eq!(config.handoff_threads, 1);
    /// ```
    #[cfg(feature = "tokio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
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
    #[cfg(feature = "tokio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    pub fn handoff_keep_alive(mut self, keep_alive: Duration) -> Self {
        self.handoff_keep_alive = keep_alive;
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
    #[cfg(feature = "tokio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    pub fn slow_poll(mut self, threshold: Duration) -> Self {
        self.slow_poll = threshold;
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
    #[cfg(feature = "rayon")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rayon")))]
    pub fn yield_after_long_polls(mut self, on: bool) -> Self {
        self.yield_after_long_polls = on;
        self
    }

    /// Makes these the settings of the process.
    ///
    /// # Examples
    ///
    /// ```
    /// let before = bridge::configure();
    /// bridge::configure().stall_warning(std::time::Duration::from_secs(2)).apply();
    /// assert_eq!(bridge::configure().stall_warning.as_secs(), 2);
    /// before.apply();
    /// ```
    pub fn apply(self) {
        bridge_core::settings::set_stall_warning(self.stall_warning);
        #[cfg(feature = "tokio")]
        {
            bridge_tokio::settings::set_handoff_threads(self.handoff_threads);
            bridge_tokio::settings::set_handoff_keep_alive(self.handoff_keep_alive);
            bridge_tokio::settings::set_slow_poll(self.slow_poll);
        }
        #[cfg(feature = "rayon")]
        bridge_rayon::settings::set_yield_after_long_polls(self.yield_after_long_polls);
    }
}
