//! Panics stay between the closure and whoever takes the result: rayon's panic handler never
//! sees one, not from the closure and not from dropping a result nobody wants.
//!
//! Its own test binary: it silences the panic hook while 10,000 tasks panic.

use bridge_rayon::ThreadPoolExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

#[test]
fn the_pool_panic_handler_never_fires() {
    let handled = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&handled);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .panic_handler(move |_| {
            counter.fetch_add(1, SeqCst);
        })
        .build()
        .unwrap();
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));

    // Panics in closures, taken by await, join, and by nobody (dropped or detached tasks).
    let mut caught = 0;
    for i in 0..10_000 {
        let task = pool.spawn_task(move || -> u32 { panic!("task {i}") });
        match i % 4 {
            0 => caught += usize::from(task.join().is_err()),
            1 => {
                let result = futures::executor::block_on(task.catch_unwind());
                caught += usize::from(result.is_err());
            }
            2 => drop(task),
            _ => task.detach(),
        }
    }
    assert_eq!(caught, 5_000);

    // Results whose destructor panics, dropped on the pool because nobody waits.
    struct PanicOnDrop;
    impl Drop for PanicOnDrop {
        fn drop(&mut self) {
            panic!("destructor");
        }
    }
    for _ in 0..1_000 {
        pool.spawn_task(|| PanicOnDrop).detach();
    }
    // Wait for everything queued so far.
    for _ in 0..2 {
        pool.spawn_fifo_task(|| ()).wait();
    }
    pool.broadcast(|_| ());

    std::panic::set_hook(default_hook);
    assert_eq!(handled.load(SeqCst), 0, "a panic reached rayon's handler");
    assert_eq!(pool.spawn_task(|| 1).wait(), 1, "the pool stopped working");
}
