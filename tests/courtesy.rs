//! Which side yields its CPU after long polls: none by default; with
//! `bridge::configure().yield_after_long_polls(true).apply()`, a stream driven by
//! `bridge::stream::on_cpu` (and a future of `bridge::cpu::spawn_future`) yields after each
//! item or poll that ran past the threshold, counted in `bridge::metrics().cpu.yielded`; a
//! stream driven by `bridge::stream::on_io` on the I/O runtime never does (a long poll
//! there is the caller's to split).
//!
//! One test, so that nothing else in this process polls on the CPU side while it counts.
#![cfg(all(not(bridge_loom), feature = "tokio", feature = "rayon"))]

use futures::StreamExt;
use std::time::{Duration, Instant};

/// Well past the threshold (100 µs).
const LONG: Duration = Duration::from_millis(2);

fn spin_for(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// Ten items, each made by 2 ms of CPU work.
fn long_items() -> impl futures::Stream<Item = u32> + Send + 'static {
    futures::stream::iter(0..10u32).map(|i| {
        spin_for(LONG);
        i
    })
}

fn yielded() -> u64 {
    bridge::metrics().cpu.yielded
}

#[test]
fn the_cpu_side_yields_after_long_items_and_the_io_side_does_not() {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // The I/O side first: nothing has polled on the CPU side in this process yet.
        let before = yielded();
        let items: Vec<u32> = bridge::block_on(bridge::stream::on_io(long_items(), 4).collect());
        assert_eq!(items, (0..10).collect::<Vec<_>>());
        assert_eq!(yielded() - before, 0, "the I/O side yielded");

        // The CPU side, off (the default).
        let before = yielded();
        let items: Vec<u32> = bridge::block_on(bridge::stream::on_cpu(long_items(), 4).collect());
        assert_eq!(items, (0..10).collect::<Vec<_>>());
        bridge::cpu::spawn_future(async { spin_for(LONG) }).wait();
        rayon::broadcast(|_| ());
        assert_eq!(yielded() - before, 0, "the CPU side yielded unasked");

        bridge::configure().yield_after_long_polls(true).apply();
        let before = yielded();
        let items: Vec<u32> = bridge::block_on(bridge::stream::on_cpu(long_items(), 4).collect());
        assert_eq!(items, (0..10).collect::<Vec<_>>());
        let cpu_items = yielded() - before;
        assert!(
            cpu_items >= 10,
            "{cpu_items} yields after 10 long items on the CPU side"
        );

        let before = yielded();
        bridge::cpu::spawn_future(async { spin_for(LONG) }).wait();
        // The poll's yield comes after its output was sent: a job on every pool thread runs
        // once each has finished what it ran (nothing else is queued).
        rayon::broadcast(|_| ());
        let cpu_poll = yielded() - before;
        assert!(cpu_poll >= 1, "no yield after a long poll of spawn_future");
        bridge::configure().yield_after_long_polls(false).apply();
        done.send(()).unwrap();
    });
    match finished.recv_timeout(Duration::from_secs(20)) {
        Ok(()) => {}
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            panic!("the test's thread panicked (its message is above)")
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("hung: not done within 20 s"),
    }
}
