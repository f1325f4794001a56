//! The oneshot study: bridge's oneshot against tokio's, futures', the `oneshot` crate,
//! crossbeam's `bounded(1)` and std's mpsc, in four hand-offs from cheapest to most
//! cross-thread; the two hand-offs from rayon again on a busy machine.

use super::{measured, under_load};
use crate::busy::Load;
use crate::harness::{MISSING, Settings, Variant, timed, timed_on, warm_up_rayon};
use crate::report::{Goal, ScenarioReport};
use futures::channel::oneshot as futures_oneshot;
use std::hint::black_box;
use std::io;
use tokio::runtime::{Builder, Runtime};

/// Runs the four scenarios, then the two from rayon under a background load.
pub fn run(settings: &Settings) -> io::Result<Vec<ScenarioReport>> {
    let rt = Builder::new_current_thread().build()?;
    warm_up_rayon();
    let mut reports = vec![
        same_thread(settings),
        await_current_thread(settings, &rt),
        rayon_to_async(settings, &rt, None),
        rayon_to_blocking(settings, None),
    ];
    let load = Load::start()?;
    reports.push(rayon_to_async(settings, &rt, Some(&load)));
    reports.push(rayon_to_blocking(settings, Some(&load)));
    Ok(reports)
}

/// The variants of rayon-to-async-busy that wait by parking at once: each receiver returns
/// Pending at its first poll, and the current-thread runtime parks the thread on its driver.
const ASYNC_PARK_AT_ONCE: &[&str] = &["tokio", "futures", "oneshot"];

/// The variants of rayon-to-blocking-busy that park at once (crossbeam's recv spins and
/// yields before it parks).
const BLOCKING_PARK_AT_ONCE: &[&str] = &["tokio", "futures", "oneshot", "std-mpsc", FLOOR];

/// The variant of rayon-to-blocking that is the machine's wake-up floor: no channel, a bare
/// park until the job's unpark.
const FLOOR: &str = "park/unpark floor";

const ASYNC_CHANNELS: &str = "the channel implementation (bridge, tokio, futures, the oneshot \
                              crate 0.2).";

/// A variant whose operation makes a channel with `$channel`, hands the sender to a job or
/// task that sends `i`, and takes the value with `$take` (on `$rx`): awaited on `$rt` where it
/// is given, blocking on the main thread otherwise.
macro_rules! hop {
    ($name:expr, $channel:expr, $rx:ident => $take:expr) => {
        Variant::new($name, |n| {
            timed(n, |i| {
                let (tx, $rx) = $channel();
                rayon::spawn(move || {
                    let _ = tx.send(i);
                });
                $take.unwrap_or(MISSING)
            })
        })
    };
    ($rt:expr, $spawn:expr, $name:expr, $channel:expr) => {
        Variant::new($name, |n| {
            timed_on($rt, n, async |i| {
                let (tx, rx) = $channel();
                $spawn(move || {
                    let _ = tx.send(i);
                });
                rx.await.unwrap_or(MISSING)
            })
        })
    };
}

/// One rayon-to-blocking operation with no channel: the job stores `i + 1` in a shared
/// atomic and unparks this thread, which parks until it sees the value. Every receive that
/// parks pays at least this; one that spins first (bridge's, crossbeam's) can beat it.
fn park_unpark_hop(i: u64) -> u64 {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let slot = Arc::new(AtomicU64::new(0));
    let me = std::thread::current();
    let theirs = Arc::clone(&slot);
    rayon::spawn(move || {
        theirs.store(i + 1, Ordering::Release);
        me.unpark();
    });
    loop {
        match slot.load(Ordering::Acquire) {
            0 => std::thread::park(),
            v => return v - 1,
        }
    }
}

fn same_thread(settings: &Settings) -> ScenarioReport {
    macro_rules! local {
        ($name:expr, $channel:expr, $rx:ident => $take:expr) => {
            Variant::new($name, |n| {
                timed(n, |i| {
                    #[allow(unused_mut)] // oneshot and crossbeam take &self
                    let (tx, mut $rx) = $channel();
                    let _ = tx.send(black_box(i));
                    black_box($take).unwrap_or(MISSING)
                })
            })
        };
    }
    let mut variants = [
        local!("bridge", bridge::oneshot::channel, rx => rx.try_recv().ok()),
        local!("tokio", tokio::sync::oneshot::channel, rx => rx.try_recv().ok()),
        local!("futures", futures_oneshot::channel, rx => rx.try_recv().ok().flatten()),
        local!("oneshot", oneshot::channel, rx => rx.try_recv().ok()),
        local!("crossbeam", || crossbeam_channel::bounded(1), rx => rx.try_recv().ok()),
    ];
    let goal = Goal::new("oneshot", 1.0, "bridge no slower than the oneshot crate");
    let report = ScenarioReport {
        name: "same-thread",
        varied: "the channel implementation (bridge, tokio, futures, the oneshot crate 0.2, \
                 crossbeam-channel bounded(1))."
            .to_owned(),
        fixed: "one thread; per operation: create a channel of u64, send, take the value with \
                try_recv, drop both halves; inputs and results pass through black_box."
            .to_owned(),
        goals: vec![goal],
        ..Default::default()
    };
    measured(report, &mut variants, 1, settings, None)
}

/// Spawns `f` as a task of the current runtime.
fn on_task(f: impl FnOnce() + Send + 'static) {
    drop(tokio::spawn(async move { f() }));
}

fn await_current_thread(settings: &Settings, rt: &Runtime) -> ScenarioReport {
    let mut variants = [
        hop!(rt, on_task, "bridge", bridge::oneshot::channel),
        hop!(rt, on_task, "tokio", tokio::sync::oneshot::channel),
        hop!(rt, on_task, "futures", futures_oneshot::channel),
        hop!(rt, on_task, "oneshot", oneshot::channel),
    ];
    let report = ScenarioReport {
        name: "await-current-thread",
        varied: ASYNC_CHANNELS.to_owned(),
        fixed: "one tokio current-thread runtime, all work on one thread; per operation: create \
                a channel of u64, tokio::spawn a task that sends, await the receiver (pending \
                first, so it registers a waker that the sending task wakes)."
            .to_owned(),
        ..Default::default()
    };
    measured(report, &mut variants, 1, settings, None)
}

fn rayon_to_async(settings: &Settings, rt: &Runtime, load: Option<&Load>) -> ScenarioReport {
    let mut variants = [
        hop!(rt, rayon::spawn, "bridge", bridge::oneshot::channel),
        hop!(rt, rayon::spawn, "tokio", tokio::sync::oneshot::channel),
        hop!(rt, rayon::spawn, "futures", futures_oneshot::channel),
        hop!(rt, rayon::spawn, "oneshot", oneshot::channel),
    ];
    let report = ScenarioReport {
        name: "rayon-to-async",
        varied: ASYNC_CHANNELS.to_owned(),
        fixed: format!(
            "a tokio current-thread runtime (the awaiting task is the block_on future on the \
             main thread: the wake from rayon unparks that thread directly) and rayon's global \
             pool of {} threads, warmed up first; per operation: create a channel of u64, \
             rayon::spawn a job that sends, await the receiver.",
            rayon::current_num_threads()
        ),
        ..Default::default()
    };
    let why = "each receiver returns Pending at its first poll and the current-thread runtime \
               then parks the main thread on its driver, with no spin.";
    let report = under_load(report, "rayon-to-async-busy", load, ASYNC_PARK_AT_ONCE, why);
    measured(report, &mut variants, 1, settings, load)
}

fn rayon_to_blocking(settings: &Settings, load: Option<&Load>) -> ScenarioReport {
    let mut variants = [
        hop!("bridge", bridge::oneshot::channel, rx => rx.recv_blocking()),
        hop!("tokio", tokio::sync::oneshot::channel, rx => rx.blocking_recv()),
        hop!("futures", futures_oneshot::channel, rx => futures::executor::block_on(rx)),
        hop!("oneshot", oneshot::channel, rx => rx.recv()),
        hop!("crossbeam", || crossbeam_channel::bounded(1), rx => rx.recv()),
        hop!("std-mpsc", std::sync::mpsc::channel, rx => rx.recv()),
        Variant::new(FLOOR, |n| timed(n, park_unpark_hop)),
    ];
    let floor = "bridge no slower than a bare park/unpark hop (this machine's wake-up floor, \
                 measured in the same run; it replaces \"5x faster than tokio's \
                 blocking_recv\", whose ratio is the machine's wake-up cost)";
    let crossbeam = "bridge at least as fast as crossbeam bounded(1)";
    let goals = [("crossbeam", crossbeam), (FLOOR, floor)];
    let report = ScenarioReport {
        name: "rayon-to-blocking",
        varied: "the channel and its blocking receive: bridge recv_blocking, tokio \
                 blocking_recv, futures via futures::executor::block_on, the oneshot crate's \
                 recv, crossbeam bounded(1) recv, std::sync::mpsc recv (std-mpsc); and the \
                 floor of any receive that parks (park/unpark floor: the job stores the value \
                 in a shared atomic and unparks the main thread, which parks until it sees it)."
            .to_owned(),
        fixed: format!(
            "no async runtime; rayon's global pool of {} threads, warmed up first; per \
             operation: create a channel of u64, rayon::spawn a job that sends, block the main \
             thread on the receiver.",
            rayon::current_num_threads()
        ),
        goals: goals
            .map(|(peer, text)| Goal::new(peer, 1.0, text))
            .to_vec(),
        ..Default::default()
    };
    let why = "tokio's blocking_recv and futures' block_on park the thread after one poll, the \
               oneshot crate's and std's mpsc recv as soon as their waker or thread is \
               registered, the park/unpark floor at once. crossbeam's recv spins and yields \
               before it parks, as bridge's recv_blocking spins first.";
    let busy = "rayon-to-blocking-busy";
    let report = under_load(report, busy, load, BLOCKING_PARK_AT_ONCE, why);
    measured(report, &mut variants, 1, settings, load)
}
