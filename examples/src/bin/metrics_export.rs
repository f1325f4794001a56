//! Exporting the bridge's metrics: a background thread takes `bridge::metrics()` every
//! 200 ms and logs one line with what changed in the interval (tasks, calls, queue-wait
//! percentiles) and the gauges (queued, running, handoff threads). The same loop could set
//! the gauges and counters of a metrics library instead of printing.
//!
//! Meanwhile the program does about a second of work through the bridge: CPU tasks through
//! `bridge::spawn` (a few of them panic, a few are cancelled before they start), and
//! `run_blocking` calls from a plain thread (inline), from tasks of a multi-thread runtime
//! (block in place) and from a current-thread runtime (handoff). At the end it checks that
//! the counters add up to exactly the work it did, prints the totals and exits; non-zero on
//! a wrong count.
//!
//! ```sh
//! cargo run --manifest-path bridge-bench/Cargo.toml -p bridge-examples --bin metrics_export
//! ```

use anyhow::ensure;
use bridge::cpu::ThreadPoolExt;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

/// How often the exporter logs.
const EVERY: Duration = Duration::from_millis(200);
/// Rounds of work, each a few milliseconds.
const ROUNDS: u64 = 100;
/// CPU tasks per round.
const TASKS: u64 = 8;
/// Tasks that panic, and tasks cancelled before they start, in all.
const PANICS: u64 = 3;
const CANCELS: u64 = 5;

/// The message of the tasks that panic on purpose.
const PLANTED: &str = "corrupt block (planted)";

fn main() -> anyhow::Result<()> {
    // The planted panics come back through their tasks; keep them out of the log.
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<&str>() != Some(&PLANTED) {
            report(info);
        }
    }));
    // The counters count from the start of the process: nothing has used the bridge yet.
    let start = bridge::metrics();
    let (stop, stopped) = mpsc::channel::<()>();
    let exporter = thread::spawn(move || export(&stopped));

    let work = work();
    stop.send(())?;
    exporter.join().expect("the exporter panicked");
    let (spawned, cancelled, panicked, inline, on_worker, handoff) = work?;

    let end = bridge::metrics();
    println!("final: {}", line(&end, &start));
    let cpu = end.cpu.since(&start.cpu);
    ensure!(
        cpu.spawned == spawned,
        "spawned {} != {spawned}",
        cpu.spawned
    );
    ensure!(
        cpu.cancelled == cancelled,
        "cancelled {} != {cancelled}",
        cpu.cancelled
    );
    ensure!(
        cpu.panicked == panicked,
        "panicked {} != {panicked}",
        cpu.panicked
    );
    ensure!(
        cpu.finished == spawned - cancelled - panicked,
        "finished {} != {}",
        cpu.finished,
        spawned - cancelled - panicked
    );
    ensure!(
        end.cpu.queued() == 0 && end.cpu.running() == 0,
        "tasks left: {end:?}"
    );
    // The first spawn of each thread, then one in 64, has its queue wait timed.
    ensure!(cpu.queue_wait.samples() > 0, "no queue wait sampled");
    let io = &end.io;
    ensure!(
        io.inline - start.io.inline == inline,
        "inline {} != {inline}",
        io.inline
    );
    ensure!(
        io.on_worker - start.io.on_worker == on_worker,
        "on_worker {} != {on_worker}",
        io.on_worker
    );
    ensure!(
        io.handoff - start.io.handoff == handoff,
        "handoff {} != {handoff}",
        io.handoff
    );
    ensure!(
        io.handoff_threads_peak >= 1,
        "no handoff thread was counted"
    );
    ensure!(io.handoff_queued == 0, "handoff calls left queued");
    println!("metrics_export: every count matches the work done");
    Ok(())
}

/// Logs a line every [`EVERY`] until `stopped` receives (or its sender is gone).
fn export(stopped: &mpsc::Receiver<()>) {
    let began = Instant::now();
    let mut last = bridge::metrics();
    loop {
        match stopped.recv_timeout(EVERY) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
        }
        let now = bridge::metrics();
        println!(
            "t={:.1}s {}",
            began.elapsed().as_secs_f64(),
            line(&now, &last)
        );
        last = now;
    }
}

/// One log line: what was counted since `last`, and the gauges of `now`.
fn line(now: &bridge::Metrics, last: &bridge::Metrics) -> String {
    let cpu = now.cpu.since(&last.cpu);
    let wait = |p| match cpu.queue_wait.percentile(p) {
        Some(bound) if bound == Duration::MAX => ">1s".to_string(),
        Some(bound) => format!("<{bound:?}"),
        None => "-".to_string(),
    };
    format!(
        "cpu spawned=+{} started=+{} finished=+{} panicked=+{} cancelled=+{} queued={} \
         running={} wait_p50={} wait_p99={} (samples={}) | io inline=+{} on_worker=+{} \
         handoff=+{} handoff_threads alive={} idle={} peak={} queued={}",
        cpu.spawned,
        cpu.started,
        cpu.finished,
        cpu.panicked,
        cpu.cancelled,
        now.cpu.queued(),
        now.cpu.running(),
        wait(50.0),
        wait(99.0),
        cpu.queue_wait.samples(),
        now.io.inline - last.io.inline,
        now.io.on_worker - last.io.on_worker,
        now.io.handoff - last.io.handoff,
        now.io.handoff_threads_alive,
        now.io.handoff_threads_idle,
        now.io.handoff_threads_peak,
        now.io.handoff_queued,
    )
}

/// About a second of work through the bridge. Returns what it did: CPU tasks spawned,
/// cancelled and panicked, and `run_blocking` calls inline, in place and handed off.
fn work() -> anyhow::Result<(u64, u64, u64, u64, u64, u64)> {
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (mut spawned, mut panicked) = (0, 0);
    let (mut inline, mut on_worker, mut handoff) = (0, 0, 0);

    for round in 0..ROUNDS {
        // CPU work: hash a few blocks on rayon's global pool.
        let tasks: Vec<_> = (0..TASKS)
            .map(|n| bridge::spawn(move || checksum(round * TASKS + n)))
            .collect();
        spawned += TASKS;
        for task in tasks {
            task.wait();
        }
        if round < PANICS {
            let failed = bridge::spawn(|| -> u64 { std::panic::panic_any(PLANTED) }).join();
            ensure!(
                failed.is_err_and(|e| e.is_panic()),
                "the panic did not come back"
            );
            spawned += 1;
            panicked += 1;
        }

        // I/O from synchronous code, from three contexts.
        bridge::run_blocking(async { tokio::time::sleep(Duration::from_millis(5)).await });
        inline += 1;
        if round % 4 == 0 {
            multi.block_on(async {
                tokio::spawn(async {
                    bridge::run_blocking(async {
                        tokio::time::sleep(Duration::from_millis(1)).await
                    })
                })
                .await
            })?;
            on_worker += 1;
            current.block_on(async {
                bridge::run_blocking(async { tokio::time::sleep(Duration::from_millis(1)).await });
            });
            handoff += 1;
        }
    }

    // Tasks cancelled before they start: queued behind a job that holds the only thread of
    // a small pool, then dropped.
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    let (open, gate) = mpsc::channel::<()>();
    let blocker = pool.spawn_task(move || gate.recv().is_ok());
    let doomed: Vec<_> = (0..CANCELS)
        .map(|n| pool.spawn_task(move || checksum(n)))
        .collect();
    drop(doomed);
    open.send(())?;
    ensure!(blocker.wait(), "the gate closed early");
    // Jobs from outside the pool start in order: once this one is done, the pool has
    // reached the cancelled ones.
    pool.spawn_task(|| ()).wait();
    spawned += 2 + CANCELS;
    Ok((spawned, CANCELS, panicked, inline, on_worker, handoff))
}

/// CPU work: a checksum over a block of generated bytes.
fn checksum(seed: u64) -> u64 {
    (0..20_000u64).fold(seed, |acc, n| {
        acc.rotate_left(5) ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    })
}
