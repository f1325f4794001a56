//! The CPU side's courtesy, off unless asked for: with `set_yield_after_long_polls(true)` a
//! pool thread yields its CPU to the OS scheduler after it has run a future task's polls, or
//! a CPU-side stream's items, for longer than the threshold (100 µs) since it last checked,
//! and not after short polls back to back; without it, never. `metrics().yielded` counts the
//! yields.
//!
//! One test, so that nothing else in this process polls on the CPU side while it counts.
#![cfg(not(bridge_loom))]

mod common;

use bridge_rayon::ThreadPoolExt;
use common::watchdog;
use futures::StreamExt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Well past the threshold (100 µs).
const LONG: Duration = Duration::from_millis(2);

/// Keeps this thread's CPU busy for `d`.
fn spin_for(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// A future that wakes itself `polls` times, each poll spinning for `each`, then is ready.
struct Polls {
    left: u32,
    each: Duration,
}

impl Future for Polls {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        spin_for(self.each);
        if self.left == 0 {
            return Poll::Ready(());
        }
        self.left -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

fn yielded() -> u64 {
    bridge_rayon::metrics().yielded
}

#[test]
fn long_polls_and_long_items_yield_and_short_ones_back_to_back_do_not() {
    watchdog(|| {
        let pool = Arc::new(common::pool(1));

        // Off (the default): long polls and long items never yield.
        let before = yielded();
        pool.spawn_future_task(Polls {
            left: 9,
            each: LONG,
        })
        .wait();
        let items = futures::stream::iter(0..10).map(|i| {
            spin_for(LONG);
            i
        });
        let crossed = futures::executor::block_on(pool.spawn_stream(items, 16).count());
        assert_eq!(crossed, 10);
        common::drain(&pool);
        assert_eq!(yielded() - before, 0, "yields with the courtesy off");

        bridge_rayon::settings::set_yield_after_long_polls(true);
        // 10 polls of 2 ms each: each ends past the threshold.
        let before = yielded();
        pool.spawn_future_task(Polls {
            left: 9,
            each: LONG,
        })
        .wait();
        // The last poll's yield comes after its output was sent: the drain waits for it.
        common::drain(&pool);
        let long_polls = yielded() - before;
        assert!(long_polls >= 10, "{long_polls} yields after 10 long polls");

        // 10,000 short polls back to back: the first may yield (the thread was idle before
        // it), and a poll the OS preempted past the threshold does; not one in a hundred.
        let before = yielded();
        pool.spawn_future_task(Polls {
            left: 9_999,
            each: Duration::ZERO,
        })
        .wait();
        common::drain(&pool);
        let short_polls = yielded() - before;
        assert!(
            short_polls < 100,
            "{short_polls} yields after 10,000 short polls"
        );

        // A stream on the pool: each long item yields, within the pump's one poll.
        let before = yielded();
        let items = futures::stream::iter(0..10).map(|i| {
            spin_for(LONG);
            i
        });
        let crossed: Vec<i32> = futures::executor::block_on(pool.spawn_stream(items, 16).collect());
        assert_eq!(crossed, (0..10).collect::<Vec<_>>());
        let long_items = yielded() - before;
        assert!(long_items >= 10, "{long_items} yields after 10 long items");

        // 10,000 short items, back to back: the bound holds them all, so the pump never
        // waits for the consumer. (A pump that waited, for a consumer slower than it, is
        // measured from its last item before the wait and may yield once per resumption, as
        // `courtesy.rs` says: with a bound of 16 a slow test thread made that ~600 yields.)
        let before = yielded();
        let crossed = futures::executor::block_on(
            pool.spawn_stream(futures::stream::iter(0..10_000), 10_000)
                .count(),
        );
        assert_eq!(crossed, 10_000);
        let short_items = yielded() - before;
        assert!(
            short_items < 100,
            "{short_items} yields after 10,000 short items"
        );
        bridge_rayon::settings::set_yield_after_long_polls(false);
    });
}
