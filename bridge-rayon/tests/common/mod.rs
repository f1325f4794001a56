//! Pools and gates the test files share.
#![allow(dead_code)]

use std::sync::mpsc;

/// A pool of `threads` threads.
pub fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

/// Occupies one thread of `pool` until the returned sender is dropped or sent to; returns
/// once the job has started.
pub fn gate(pool: &rayon::ThreadPool) -> mpsc::Sender<()> {
    let (open, gate) = mpsc::channel::<()>();
    let (started_tx, started) = mpsc::channel();
    pool.spawn(move || {
        started_tx.send(()).unwrap();
        let _ = gate.recv();
    });
    started.recv().unwrap();
    open
}

/// Waits until every job queued on `pool` so far has finished.
pub fn drain(pool: &rayon::ThreadPool) {
    pool.broadcast(|_| ());
}
