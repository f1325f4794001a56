//! The I/O side's watch: a poll that holds an I/O worker past the slow-poll threshold is named
//! once, with its spawn site, while it runs or when it returns; a short one is not; a runtime
//! under `watch` whose workers are held is named; the watch ends with its runtime.
//!
//! The counts are the process's: the tests of this binary run one at a time, and nothing
//! else in it polls long on the I/O side.
#![cfg(not(bridge_loom))]

#[cfg(feature = "tracing")]
mod trace_recorder;

use bridge_tokio::{IoRuntime, metrics, spawn_io, watch};
use std::sync::{Mutex, MutexGuard, PoisonError, mpsc};
use std::thread;
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    #[cfg(feature = "tracing")]
    trace_recorder::install();
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A poll that holds its worker `d` (CPU work or a blocking call inline).
async fn hold(d: Duration) {
    thread::sleep(d);
}

/// Waits until `done`, for at most 10 s.
fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_50ms_poll_is_named_once_with_its_spawn_site_and_a_1ms_poll_is_not() {
    let _serial = serial();
    let before = metrics();
    let line = line!() + 1;
    spawn_io(hold(Duration::from_millis(50))).wait();
    let after = metrics();
    assert_eq!(after.slow_polls - before.slow_polls, 1);
    let polls = after.poll_durations.since(&before.poll_durations);
    assert!(
        polls.percentile(100.0).unwrap() >= Duration::from_millis(32),
        "{polls:?}"
    );
    #[cfg(feature = "tracing")]
    {
        let site = format!("{}:{line}:", file!());
        let named = trace_recorder::seen_prefix("a poll of a future spawned at");
        assert!(
            named.iter().any(|seen| seen.message.contains(&site)
                && seen.level == tracing::Level::WARN
                && seen.message.contains("bridge::spawn")),
            "no warning names {site}: {named:?}"
        );
    }
    #[cfg(not(feature = "tracing"))]
    let _ = line;

    let before = metrics().slow_polls;
    for _ in 0..20 {
        spawn_io(hold(Duration::from_millis(1))).wait();
    }
    assert_eq!(metrics().slow_polls, before, "a 1 ms poll is not slow");
}

#[test]
fn a_poll_that_does_not_return_is_named_while_it_runs_and_only_once() {
    let _serial = serial();
    let before = metrics().slow_polls;
    let (release, released) = mpsc::channel::<()>();
    let task = spawn_io(async move {
        // A sync wait inline on the I/O side: it holds the worker until released.
        released.recv().unwrap();
    });
    until("the held poll to be named while it runs", || {
        metrics().slow_polls > before
    });
    // Held for several more of the watcher's looks, then released: still one report.
    thread::sleep(Duration::from_millis(350));
    release.send(()).unwrap();
    task.wait();
    assert_eq!(metrics().slow_polls - before, 1);
}

#[test]
fn a_dedicated_io_runtime_is_watched_too_and_off_means_off() {
    let _serial = serial();
    let io = IoRuntime::new(1).unwrap();
    let before = metrics().slow_polls;
    io.spawn(hold(Duration::from_millis(40))).wait();
    assert_eq!(metrics().slow_polls - before, 1);

    let previous = bridge_tokio::settings::slow_poll();
    bridge_tokio::settings::set_slow_poll(Duration::MAX);
    let before = metrics().slow_polls;
    io.spawn(hold(Duration::from_millis(40))).wait();
    assert_eq!(metrics().slow_polls, before, "off: nothing named");
    bridge_tokio::settings::set_slow_poll(previous);
}

#[test]
fn a_watched_current_thread_runtime_whose_thread_is_held_is_named() {
    let _serial = serial();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let watch = watch(rt.handle());
    // Driven and idle: the probe runs on time, nothing is named.
    let before = metrics().held_runtimes;
    rt.block_on(tokio::task::yield_now());
    rt.block_on(async {
        for _ in 0..6 {
            tokio::task::yield_now().await;
            hold(Duration::from_millis(1)).await;
            tokio::task::yield_now().await;
        }
    });
    let before_hold = metrics().held_runtimes;
    assert_eq!(before_hold, before, "an idle runtime is not held");
    // A decode left inline: the runtime's only thread is held for 700 ms.
    rt.block_on(hold(Duration::from_millis(700)));
    assert!(metrics().held_runtimes > before_hold);
    drop(watch);
}

#[test]
fn a_watched_multi_thread_runtime_with_its_worker_busy_is_named() {
    let _serial = serial();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    let _watch = watch(rt.handle());
    let before = metrics().held_runtimes;
    rt.block_on(async {
        tokio::spawn(hold(Duration::from_millis(700)))
            .await
            .unwrap();
    });
    until("the held runtime to be named", || {
        metrics().held_runtimes > before
    });
}

#[test]
fn the_watch_ends_with_its_runtime_and_leaves_no_thread_behind() {
    let _serial = serial();
    // The watcher thread exists once the first watch does.
    let first = tokio::runtime::Runtime::new().unwrap();
    drop(watch(first.handle()));
    drop(first);
    let alive = threads();
    for _ in 0..5 {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let watch = watch(rt.handle());
        rt.block_on(tokio::task::yield_now());
        drop(rt);
        assert!(format!("{watch:?}").contains("stopped: true"), "{watch:?}");
        // A stopped watch is never named, however long it waits.
        let before = metrics().held_runtimes;
        thread::sleep(Duration::from_millis(300));
        assert_eq!(metrics().held_runtimes, before);
    }
    // (The first runtime's workers may still be exiting: fewer, never more.)
    assert!(
        threads() <= alive,
        "a thread left behind: {} > {alive}",
        threads()
    );
}

/// The threads of this process.
fn threads() -> usize {
    #[cfg(target_os = "linux")]
    return std::fs::read_dir("/proc/self/task").unwrap().count();
    #[cfg(not(target_os = "linux"))]
    return 0;
}

/// A future of the user's, on the user's own runtime, wrapped in `bridge::rt::watched`: a
/// 50 ms poll past a 20 ms threshold is counted, and named with the line that wrapped it.
#[test]
fn a_slow_poll_of_a_watched_future_on_a_users_runtime_is_named_with_its_line() {
    let _serial = serial();
    let threshold = bridge_tokio::settings::slow_poll();
    bridge_tokio::settings::set_slow_poll(Duration::from_millis(20));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    let before = metrics();
    let line = line!() + 1;
    let handler = bridge_tokio::watched(async {
        // A hash computed inline in a handler.
        thread::sleep(Duration::from_millis(50));
        7
    });
    assert_eq!(rt.block_on(rt.spawn(handler)).unwrap(), 7);
    let fast = rt.spawn(bridge_tokio::watched(async {
        tokio::task::yield_now().await
    }));
    rt.block_on(fast).unwrap();
    let after = metrics();
    bridge_tokio::settings::set_slow_poll(threshold);

    assert_eq!(after.slow_polls - before.slow_polls, 1);
    let polls = after.poll_durations.since(&before.poll_durations);
    let timed: u64 = polls.buckets().map(|(_, n)| n).sum();
    assert!(timed >= 3, "every poll is timed: {polls:?}");
    assert!(
        polls.percentile(100.0).unwrap() >= Duration::from_millis(32),
        "{polls:?}"
    );
    #[cfg(feature = "tracing")]
    {
        let site = format!("{}:{line}:", file!());
        let named = trace_recorder::seen_prefix("a poll of the future watched at");
        assert!(
            named.iter().any(|seen| seen.message.contains(&site)
                && seen.level == tracing::Level::WARN
                && seen.message.contains("bridge::spawn")),
            "no warning names {site}: {named:?}"
        );
    }
    #[cfg(not(feature = "tracing"))]
    let _ = line;
}
