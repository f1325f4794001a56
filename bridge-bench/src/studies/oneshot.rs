//! The oneshot study: bridge's oneshot against tokio's, futures', the `oneshot` crate and
//! crossbeam's `bounded(1)`, in four hand-offs from cheapest to most cross-thread.

use crate::harness::{MISSING, Settings, Variant, measure, timed, timed_on, warm_up_rayon};
use crate::report::{Goal, ScenarioReport, rows};
use std::hint::black_box;
use std::io;
use tokio::runtime::{Builder, Runtime};

/// Runs the four scenarios.
///
/// # Errors
///
/// If a tokio runtime cannot be built.
pub fn run(settings: &Settings) -> io::Result<Vec<ScenarioReport>> {
    let rt = Builder::new_current_thread().build()?;
    warm_up_rayon();
    Ok(vec![
        same_thread(settings),
        await_current_thread(settings, &rt),
        rayon_to_async(settings, &rt),
        rayon_to_blocking(settings),
    ])
}

fn scenario(
    name: &'static str,
    varied: &str,
    fixed: String,
    goals: Vec<Goal>,
    variants: &mut [Variant<'_>],
    settings: &Settings,
) -> ScenarioReport {
    let m = measure(variants, settings);
    ScenarioReport {
        name,
        varied: varied.to_owned(),
        fixed,
        goals,
        budgets: Vec::new(),
        notes: Vec::new(),
        rows: rows(name, &m),
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

fn rayon_to_async(settings: &Settings, rt: &Runtime) -> ScenarioReport {
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
    scenario(
        "rayon-to-async",
        "the channel implementation (bridge, tokio, futures, the oneshot crate 0.2).",
        format!(
            "a tokio current-thread runtime (chosen so the awaiting task is the block_on future \
             on the main thread: the wake from rayon unparks that thread directly, with no \
             second tokio worker in the path) and rayon's global pool of {} threads, warmed \
             up first; per operation: create a channel of u64, rayon::spawn a job that sends, \
             await the receiver.",
            rayon::current_num_threads()
        ),
        Vec::new(),
        &mut variants,
        settings,
    )
}

fn rayon_to_blocking(settings: &Settings) -> ScenarioReport {
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
    ];
    scenario(
        "rayon-to-blocking",
        "the channel and its blocking receive: bridge recv_blocking, tokio blocking_recv, \
         futures via futures::executor::block_on, the oneshot crate's recv, crossbeam \
         bounded(1) recv.",
        format!(
            "no async runtime; rayon's global pool of {} threads, warmed up first; per \
             operation: create a channel of u64, rayon::spawn a job that sends, block the main \
             thread on the receiver.",
            rayon::current_num_threads()
        ),
        vec![
            Goal {
                peer: "crossbeam",
                at_least: 1.0,
                text: "bridge at least as fast as crossbeam bounded(1)",
            },
            Goal {
                peer: "tokio",
                at_least: 5.0,
                text: "bridge at least 5x faster than tokio's blocking_recv",
            },
        ],
        &mut variants,
        settings,
    )
}
