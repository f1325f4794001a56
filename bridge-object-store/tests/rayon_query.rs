//! The shape of a synchronous query over an object store, called from every worker of a
//! rayon pool at once (a `par_iter` over queries, pools of 1, 2 and 8 threads): each query
//! reads an object through `IoStore` on the I/O side, decodes its chunks on the pool that
//! runs the query (a CPU-side stream), and sums them. The waiting workers run the decode
//! they wait for, so every query finishes, with the right sum, under a watchdog.

mod common;

use bridge_object_store::IoStore;
use bridge_rayon::ThreadPoolExt;
use bytes::Bytes;
use common::{WATCHDOG, watchdog};
use futures::StreamExt;
use object_store::ObjectStoreExt;
use object_store::memory::InMemory;
use object_store::path::Path;
use rayon::prelude::*;
use std::sync::Arc;

/// The object: 256 KiB of bytes counting up modulo 251.
fn object() -> Vec<u8> {
    (0..256 * 1024).map(|i| (i % 251) as u8).collect()
}

/// The query: the object's bytes read on the I/O side, summed chunk by chunk on `pool`.
fn query(store: &Arc<IoStore<InMemory>>, pool: &Arc<rayon::ThreadPool>) -> u64 {
    let store = Arc::clone(store);
    let pool = Arc::clone(pool);
    bridge_tokio::run_blocking(async move {
        let body = store.get(&Path::from("data")).await.unwrap().into_stream();
        let sums = body.map(|chunk| chunk.unwrap().iter().map(|&b| u64::from(b)).sum::<u64>());
        pool.spawn_stream(sums, 2)
            .fold(0, |total, sum| async move { total + sum })
            .await
    })
}

#[test]
fn queries_from_every_worker_of_a_pool_finish() {
    let expected: u64 = object().iter().map(|&b| u64::from(b)).sum();
    for threads in [1, 2, 8] {
        let results = watchdog("par_iter of queries", WATCHDOG, move || {
            let store = Arc::new(IoStore::new(InMemory::new()));
            let data = Bytes::from(object());
            bridge_tokio::run_blocking(store.put(&Path::from("data"), data.into())).unwrap();
            let pool = Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap(),
            );
            pool.install(|| {
                (0..4 * threads)
                    .into_par_iter()
                    .map(|_| query(&store, &pool))
                    .collect::<Vec<_>>()
            })
        });
        assert_eq!(results.len(), 4 * threads);
        assert!(
            results.iter().all(|&sum| sum == expected),
            "{threads} threads: {results:?}"
        );
    }
}
