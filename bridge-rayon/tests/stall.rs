//! A wait from outside rayon for a task that never starts is counted at the stall
//! threshold (`bridge::rt::stall_warning`), once; one that starts in time is not. Alone in
//! its test binary: the threshold and the count are the process's.

mod common;

use bridge_rayon::ThreadPoolExt;
use common::{gate, pool, watchdog};
use std::thread;
use std::time::Duration;

/// A thread outside rayon that waits for a task whose pool never starts it (its only thread
/// blocked in something the bridge cannot see) is counted at the stall threshold, once, and
/// still gets the value once the pool frees up. A task that starts in time is not counted.
#[test]
fn a_wait_for_a_task_that_never_starts_is_counted_at_the_threshold() {
    watchdog(|| {
        let previous = bridge_core::settings::stall_warning();
        bridge_core::settings::set_stall_warning(Duration::from_millis(100));
        let pool = pool(1);
        let hold = gate(&pool);
        let before = bridge_rayon::metrics().stalled_waits;
        let task = pool.spawn_task(|| 7);
        let waiter = thread::spawn(move || task.wait());
        thread::sleep(Duration::from_millis(400));
        assert_eq!(bridge_rayon::metrics().stalled_waits, before + 1);
        drop(hold);
        assert_eq!(waiter.join().unwrap(), 7);

        let prompt = bridge_rayon::metrics().stalled_waits;
        assert_eq!(pool.spawn_task(|| 8).wait(), 8);
        assert_eq!(bridge_rayon::metrics().stalled_waits, prompt);
        bridge_core::settings::set_stall_warning(previous);
    });
}
