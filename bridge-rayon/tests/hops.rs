//! A million hops through a real pool, in batches of 1,000 concurrent tasks: every value comes
//! back to the right task, every value is dropped exactly once, and no thread is added.
//!
//! Its own test binary, so that no other test's threads disturb the thread count.

mod common;

use bridge_rayon::ThreadPoolExt;
use common::{drain, pool};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

#[test]
fn a_million_hops_with_exact_drop_counts_and_no_new_threads() {
    struct Counted(usize, Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.1.fetch_add(1, SeqCst);
        }
    }
    let pool = pool(2);
    // Warm the pool up so its threads exist before the count.
    drain(&pool);
    let threads = thread_count();
    let drops = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::with_capacity(1000);
    for batch in 0..1_000 {
        for i in 0..1_000 {
            let drops = Arc::clone(&drops);
            let id = batch * 1_000 + i;
            tasks.push(pool.spawn_task(move || Counted(id, drops)));
        }
        for (i, task) in tasks.drain(..).enumerate() {
            let value = task.wait();
            assert_eq!(value.0, batch * 1_000 + i);
        }
    }
    assert_eq!(drops.load(SeqCst), 1_000_000);
    assert_eq!(thread_count(), threads, "the hops changed the thread count");
}

fn thread_count() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Threads:")).unwrap();
    line["Threads:".len()..].trim().parse().unwrap()
}
