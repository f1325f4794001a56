//! The watcher thread (`bridge-watch`) sleeps when it has nothing to look at: no wake-up at
//! all once no watch is alive and nothing has run on the I/O side for a while, and none with
//! the watch turned off (`slow_poll(Duration::MAX)`), a watch alive or not. Its wake-ups are
//! counted as the kernel counts them: the voluntary context switches of the thread named
//! `bridge-watch` (each sleep or park that ends is one).
//!
//! One test: the watcher and the threshold are the process's.
#![cfg(all(not(bridge_loom), target_os = "linux"))]

use std::thread;
use std::time::{Duration, Instant};

/// The watcher's voluntary context switches so far, once its thread exists.
fn watcher_switches() -> Option<u64> {
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim_end() != "bridge-watch" {
            continue;
        }
        let status = std::fs::read_to_string(task.path().join("status")).ok()?;
        return status
            .lines()
            .find_map(|line| line.strip_prefix("voluntary_ctxt_switches:"))
            .map(|count| count.trim().parse().unwrap());
    }
    None
}

/// The watcher's wake-ups during `d`.
fn wake_ups_during(d: Duration) -> u64 {
    let before = watcher_switches().expect("the watcher thread");
    thread::sleep(d);
    watcher_switches().expect("the watcher thread") - before
}

/// One poll on the I/O side (it starts the watcher, and wakes it when it sleeps).
fn one_io_poll() {
    bridge_tokio::spawn_io(async { 1 }).wait();
}

#[test]
fn the_watcher_sleeps_when_idle_and_when_the_watch_is_off() {
    let default = bridge_tokio::settings::slow_poll();
    one_io_poll();
    let deadline = Instant::now() + Duration::from_secs(10);
    while watcher_switches().is_none() {
        assert!(Instant::now() < deadline, "no bridge-watch thread");
        thread::sleep(Duration::from_millis(10));
    }

    // A watch alive, the threshold finite: the watcher looks several times a second (this
    // also shows that the count counts).
    let rt = tokio::runtime::Runtime::new().unwrap();
    let watch = bridge_tokio::watch(rt.handle());
    let watching = wake_ups_during(Duration::from_secs(1));
    assert!(watching >= 5, "{watching} wake-ups in 1 s while watching");

    // The watch dropped and nothing run on the I/O side: after a while, none.
    drop(watch);
    thread::sleep(Duration::from_millis(1500));
    assert_eq!(wake_ups_during(Duration::from_secs(1)), 0, "idle, no watch");

    // A poll on the I/O side wakes it again.
    one_io_poll();
    let woken = wake_ups_during(Duration::from_millis(500));
    assert!(woken >= 2, "{woken} wake-ups in 0.5 s after a poll");

    // The watch off: none, with a watch alive and polls running.
    bridge_tokio::settings::set_slow_poll(Duration::MAX);
    let watch = bridge_tokio::watch(rt.handle());
    thread::sleep(Duration::from_millis(300));
    let before = watcher_switches().unwrap();
    for _ in 0..10 {
        one_io_poll();
        thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(watcher_switches().unwrap() - before, 0, "the watch off");
    drop(watch);
    bridge_tokio::settings::set_slow_poll(default);
}
