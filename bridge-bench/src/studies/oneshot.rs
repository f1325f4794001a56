//! The oneshot study: bridge's oneshot against tokio's, futures', the `oneshot` crate,
//! crossbeam's `bounded(1)` and std's mpsc, in four hand-offs from cheapest to most
//! cross-thread; the two hand-offs from rayon again on a busy machine.

use crate::busy::{Load, busy_frame, park_at_once_note};
use crate::harness::{MISSING, Settings, Variant, measure_loaded, timed, timed_on, warm_up_rayon};
use crate::report::{Goal, LoadGoal, ScenarioReport, busy_goals, rows};
use std::hint::black_box;
use std::io;
use tokio::runtime::{Builder, Runtime};

/// Runs the four scenarios, then the two from rayon under a background load.
///
/// # Errors
///
/// If a tokio runtime or the background load cannot be started.
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

fn scenario(
    name: &'static str,
    varied: &str,
    fixed: String,
    goals: Vec<Goal>,
    variants: &mut [Variant<'_>],
    settings: &Settings,
) -> ScenarioReport {
    loaded_scenario(
        name,
        varied,
        fixed,
        goals,
        Vec::new(),
        variants,
        settings,
        None,
    )
}

#[allow(clippy::too_many_arguments)]
fn loaded_scenario(
    name: &'static str,
    varied: &str,
    fixed: String,
    goals: Vec<Goal>,
    load_goals: Vec<LoadGoal>,
    variants: &mut [Variant<'_>],
    settings: &Settings,
    load: Option<&Load>,
) -> ScenarioReport {
    let m = measure_loaded(variants, settings, load);
    ScenarioReport {
        name,
        varied: varied.to_owned(),
        fixed,
        goals,
        load_goals,
        rows: rows(name, &m),
        ..Default::default()
    }
}

/// The variants of rayon-to-async-busy that wait by parking at once: each receiver returns
/// Pending at its first poll, and the current-thread runtime parks the thread on its driver
/// without spinning.
const ASYNC_PARK_AT_ONCE: &[&str] = &["tokio", "futures", "oneshot"];

/// The variants of rayon-to-blocking-busy that park at once: tokio's blocking_recv and
/// futures' block_on park the thread after one poll, the oneshot crate's recv parks once its
/// waker is stored, std's mpsc recv once it is registered. crossbeam's recv is not one: it
/// spins and yields (its Backoff) before it parks.
const BLOCKING_PARK_AT_ONCE: &[&str] = &["tokio", "futures", "oneshot", "std-mpsc", FLOOR];

/// The variant of rayon-to-blocking that is the machine's wake-up floor: no channel, a bare
/// park until the job's unpark.
const FLOOR: &str = "park/unpark floor";

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
    let mut variants = [
        Variant::new("bridge", |n| {
            timed(n, |i| {
                let (tx, mut rx) = bridge::oneshot::channel();
                let _ = tx.send(black_box(i));
                black_box(rx.try_recv()).unwrap_or(MISSING)
            })
        }),
        Variant::new("tokio", |n| {
            timed(n, |i| {
                let (tx, mut rx) = tokio::sync::oneshot::channel();
                let _ = tx.send(black_box(i));
                black_box(rx.try_recv()).unwrap_or(MISSING)
            })
        }),
        Variant::new("futures", |n| {
            timed(n, |i| {
                let (tx, mut rx) = futures::channel::oneshot::channel();
                let _ = tx.send(black_box(i));
                black_box(rx.try_recv()).ok().flatten().unwrap_or(MISSING)
            })
        }),
        Variant::new("oneshot", |n| {
            timed(n, |i| {
                let (tx, rx) = oneshot::channel();
                let _ = tx.send(black_box(i));
                black_box(rx.try_recv()).unwrap_or(MISSING)
            })
        }),
        Variant::new("crossbeam", |n| {
            timed(n, |i| {
                let (tx, rx) = crossbeam_channel::bounded(1);
                let _ = tx.send(black_box(i));
                black_box(rx.try_recv()).unwrap_or(MISSING)
            })
        }),
    ];
    scenario(
        "same-thread",
        "the channel implementation (bridge, tokio, futures, the oneshot crate 0.2, \
         crossbeam-channel bounded(1)).",
        "one thread; per operation: create a channel of u64, send, take the value with \
         try_recv, drop both halves; inputs and results pass through black_box."
            .to_owned(),
        vec![Goal {
            peer: "oneshot",
            at_least: 1.0,
            text: "bridge no slower than the oneshot crate",
        }],
        &mut variants,
        settings,
    )
}

fn await_current_thread(settings: &Settings, rt: &Runtime) -> ScenarioReport {
    let mut variants = [
        Variant::new("bridge", |n| {
            timed_on(rt, n, async |i| {
                let (tx, rx) = bridge::oneshot::channel();
                tokio::spawn(async move {
                    let _ = tx.send(i);
                });
                rx.await.unwrap_or(MISSING)
            })
        }),
        Variant::new("tokio", |n| {
            timed_on(rt, n, async |i| {
                let (tx, rx) = tokio::sync::oneshot::channel();
                tokio::spawn(async move {
                    let _ = tx.send(i);
                });
                rx.await.unwrap_or(MISSING)
            })
        }),
        Variant::new("futures", |n| {
            timed_on(rt, n, async |i| {
                let (tx, rx) = futures::channel::oneshot::channel();
                tokio::spawn(async move {
                    let _ = tx.send(i);
                });
                rx.await.unwrap_or(MISSING)
            })
        }),
        Variant::new("oneshot", |n| {
            timed_on(rt, n, async |i| {
                let (tx, rx) = oneshot::channel();
                tokio::spawn(async move {
                    let _ = tx.send(i);
                });
                rx.await.unwrap_or(MISSING)
            })
        }),
    ];
    scenario(
        "await-current-thread",
        "the channel implementation (bridge, tokio, futures, the oneshot crate 0.2).",
        "one tokio current-thread runtime, all work on one thread; per operation: create a \
         channel of u64, tokio::spawn a task that sends, await the receiver (it is pending \
         first, so it registers a waker and the sending task wakes it). The oneshot crate's \
         receiver is awaited through its IntoFuture."
            .to_owned(),
        Vec::new(),
        &mut variants,
        settings,
    )
}

fn rayon_to_async(settings: &Settings, rt: &Runtime, load: Option<&Load>) -> ScenarioReport {
    let mut variants = [
        Variant::new("bridge", |n| {
            timed_on(rt, n, async |i| {
                let (tx, rx) = bridge::oneshot::channel();
                rayon::spawn(move || {
                    let _ = tx.send(i);
                });
                rx.await.unwrap_or(MISSING)
            })
        }),
        Variant::new("tokio", |n| {
            timed_on(rt, n, async |i| {
                let (tx, rx) = tokio::sync::oneshot::channel();
                rayon::spawn(move || {
                    let _ = tx.send(i);
                });
                rx.await.unwrap_or(MISSING)
            })
        }),
        Variant::new("futures", |n| {
            timed_on(rt, n, async |i| {
                let (tx, rx) = futures::channel::oneshot::channel();
                rayon::spawn(move || {
                    let _ = tx.send(i);
                });
                rx.await.unwrap_or(MISSING)
            })
        }),
        Variant::new("oneshot", |n| {
            timed_on(rt, n, async |i| {
                let (tx, rx) = oneshot::channel();
                rayon::spawn(move || {
                    let _ = tx.send(i);
                });
                rx.await.unwrap_or(MISSING)
            })
        }),
    ];
    let (name, fixed) = busy_frame(
        "rayon-to-async",
        "rayon-to-async-busy",
        format!(
            "a tokio current-thread runtime (chosen so the awaiting task is the block_on future \
             on the main thread: the wake from rayon unparks that thread directly, with no \
             second tokio worker in the path) and rayon's global pool of {} threads, warmed \
             up first; per operation: create a channel of u64, rayon::spawn a job that sends, \
             await the receiver.",
            rayon::current_num_threads()
        ),
        load,
    );
    let mut report = loaded_scenario(
        name,
        "the channel implementation (bridge, tokio, futures, the oneshot crate 0.2).",
        fixed,
        Vec::new(),
        load.map_or_else(Vec::new, |_| busy_goals(ASYNC_PARK_AT_ONCE)),
        &mut variants,
        settings,
        load,
    );
    if load.is_some() {
        report.notes.push(park_at_once_note(
            ASYNC_PARK_AT_ONCE,
            "each receiver returns Pending at its first poll and the current-thread runtime \
             then parks the main thread on its driver, with no spin.",
        ));
    }
    report
}

fn rayon_to_blocking(settings: &Settings, load: Option<&Load>) -> ScenarioReport {
    let mut variants = [
        Variant::new("bridge", |n| {
            timed(n, |i| {
                let (tx, rx) = bridge::oneshot::channel();
                rayon::spawn(move || {
                    let _ = tx.send(i);
                });
                rx.recv_blocking().unwrap_or(MISSING)
            })
        }),
        Variant::new("tokio", |n| {
            timed(n, |i| {
                let (tx, rx) = tokio::sync::oneshot::channel();
                rayon::spawn(move || {
                    let _ = tx.send(i);
                });
                rx.blocking_recv().unwrap_or(MISSING)
            })
        }),
        Variant::new("futures", |n| {
            timed(n, |i| {
                let (tx, rx) = futures::channel::oneshot::channel();
                rayon::spawn(move || {
                    let _ = tx.send(i);
                });
                futures::executor::block_on(rx).unwrap_or(MISSING)
            })
        }),
        Variant::new("oneshot", |n| {
            timed(n, |i| {
                let (tx, rx) = oneshot::channel();
                rayon::spawn(move || {
                    let _ = tx.send(i);
                });
                rx.recv().unwrap_or(MISSING)
            })
        }),
        Variant::new("crossbeam", |n| {
            timed(n, |i| {
                let (tx, rx) = crossbeam_channel::bounded(1);
                rayon::spawn(move || {
                    let _ = tx.send(i);
                });
                rx.recv().unwrap_or(MISSING)
            })
        }),
        Variant::new("std-mpsc", |n| {
            timed(n, |i| {
                let (tx, rx) = std::sync::mpsc::channel();
                rayon::spawn(move || {
                    let _ = tx.send(i);
                });
                rx.recv().unwrap_or(MISSING)
            })
        }),
        Variant::new(FLOOR, |n| timed(n, park_unpark_hop)),
    ];
    let (name, fixed) = busy_frame(
        "rayon-to-blocking",
        "rayon-to-blocking-busy",
        format!(
            "no async runtime; rayon's global pool of {} threads, warmed up first; per \
             operation: create a channel of u64, rayon::spawn a job that sends, block the main \
             thread on the receiver.",
            rayon::current_num_threads()
        ),
        load,
    );
    let goals = if load.is_some() {
        Vec::new()
    } else {
        vec![
            Goal {
                peer: "crossbeam",
                at_least: 1.0,
                text: "bridge at least as fast as crossbeam bounded(1)",
            },
            Goal {
                peer: FLOOR,
                at_least: 1.0,
                text: "bridge no slower than a bare park/unpark hop (this machine's wake-up \
                       floor, measured in the same run; it replaces \"5x faster than \
                       tokio's blocking_recv\", whose ratio is the machine's wake-up cost)",
            },
        ]
    };
    let mut report = loaded_scenario(
        name,
        "the channel and its blocking receive: bridge recv_blocking, tokio blocking_recv, \
         futures via futures::executor::block_on, the oneshot crate's recv, crossbeam \
         bounded(1) recv, std::sync::mpsc::channel recv (std-mpsc); and no channel at all, \
         the floor of any receive that parks (park/unpark floor: the job stores the value in \
         a shared atomic and unparks the main thread, which parks until it sees it).",
        fixed,
        goals,
        load.map_or_else(Vec::new, |_| busy_goals(BLOCKING_PARK_AT_ONCE)),
        &mut variants,
        settings,
        load,
    );
    if load.is_some() {
        report.notes.push(park_at_once_note(
            BLOCKING_PARK_AT_ONCE,
            "tokio's blocking_recv and futures' block_on park the thread after one poll, the \
             oneshot crate's recv parks as soon as its waker is stored, and std's mpsc recv \
             (the unbounded channel) parks as soon as it is registered, the park/unpark floor \
             at once. crossbeam's recv does \
             not count: it spins and yields before it parks, as bridge's recv_blocking spins \
             before it parks.",
        ));
    }
    report
}
