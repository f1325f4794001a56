//! One `IoStore` shared at once by several current-thread runtimes (each on its own thread)
//! and by rayon threads (synchronous calls and CPU-side tasks), against the HTTP store (one
//! pooled client, whose connections would otherwise belong to whichever runtime opened
//! them) and the in-memory store. Every call is bounded (a timeout on the runtimes, a
//! deadline on the synchronous calls) and the whole under a watchdog, so a stall fails the
//! test instead of hanging it; at the end every object written is read back.
#![cfg(not(bridge_loom))]

mod common;

use bridge_object_store::IoStore;
use common::{Backend, Kind, WATCHDOG, watchdog};
use futures::StreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use std::sync::{Arc, Barrier};
use std::time::Duration;

const RUNTIMES: usize = 4;
const RAYON_JOBS: usize = 8;
const ROUNDS: usize = 20;
/// The limit on each call.
const CALL: Duration = Duration::from_secs(10);

fn body(who: &str, round: usize) -> Vec<u8> {
    format!("{who} round {round}: {}", "x".repeat(round * 100)).into_bytes()
}

/// `future`'s output, or a failure if it takes longer than [`CALL`].
async fn within<F: std::future::Future>(who: &str, what: &str, future: F) -> F::Output {
    tokio::time::timeout(CALL, future)
        .await
        .unwrap_or_else(|_| panic!("{who}: {what} stalled"))
}

/// The output of a bounded synchronous call, or a failure if it did not finish.
#[track_caller]
fn bounded<T>(who: &str, what: &str, result: Result<T, bridge_core::Error>) -> T {
    result.unwrap_or_else(|error| panic!("{who}: {what}: {error}"))
}

/// One round of calls from async code (a current-thread runtime's task, a CPU-side task).
async fn async_round(store: &dyn ObjectStore, who: &str, round: usize) {
    let path = Path::from(format!("shared/{who}/{round}"));
    let data = body(who, round);
    within(who, "put", store.put(&path, PutPayload::from(data.clone())))
        .await
        .expect("put");
    let result = within(who, "get", store.get(&path)).await.expect("get");
    let chunks: Vec<_> = within(who, "the body", result.into_stream().collect::<Vec<_>>()).await;
    let got: Vec<u8> = chunks
        .into_iter()
        .flat_map(|c| c.expect("a chunk").to_vec())
        .collect();
    assert_eq!(got, data);
    let meta = within(who, "head", store.head(&path)).await.expect("head");
    assert_eq!(meta.size, data.len() as u64);
    let mine = Path::from(format!("shared/{who}"));
    let listed = within(who, "list", store.list(Some(&mine)).collect::<Vec<_>>()).await;
    assert_eq!(listed.len(), round + 1, "{who}: its objects so far");
}

/// One round of calls from synchronous code on a rayon thread.
fn sync_round(store: &dyn ObjectStore, who: &str, round: usize) {
    let path = Path::from(format!("shared/{who}/{round}"));
    let data = body(who, round);
    bounded(
        who,
        "put",
        bridge_tokio::try_run_blocking_timeout(
            store.put(&path, PutPayload::from(data.clone())),
            CALL,
        ),
    )
    .expect("put");
    let result = bounded(
        who,
        "get",
        bridge_tokio::try_run_blocking_timeout(store.get(&path), CALL),
    )
    .expect("get");
    let mut got = Vec::new();
    let mut chunks = bridge_tokio::iter_blocking(result.into_stream());
    while let Some(chunk) = chunks
        .try_next()
        .unwrap_or_else(|error| panic!("{who}: the body: {error}"))
    {
        got.extend_from_slice(&chunk.expect("a chunk"));
    }
    assert_eq!(got, data);
    let range = bounded(
        who,
        "get_range",
        bridge_tokio::try_run_blocking_timeout(store.get_range(&path, 0..4), CALL),
    )
    .expect("get_range");
    assert_eq!(range.as_ref(), &data[..4]);
}

fn shared_by_everyone(kind: Kind) {
    let backend = Backend::new(kind);
    let store: Arc<dyn ObjectStore> = Arc::new(IoStore::new(Arc::clone(&backend.store)));
    let everyone = Arc::new(Barrier::new(RUNTIMES + 1));
    let mut threads = Vec::new();
    for n in 0..RUNTIMES {
        let (store, everyone) = (Arc::clone(&store), Arc::clone(&everyone));
        threads.push(std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            everyone.wait();
            let who = format!("rt{n}");
            rt.block_on(async {
                for round in 0..ROUNDS {
                    async_round(&*store, &who, round).await;
                }
            });
        }));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    everyone.wait();
    pool.scope(|scope| {
        for job in 0..RAYON_JOBS {
            let store = Arc::clone(&store);
            scope.spawn(move |_| {
                let who = format!("rayon{job}");
                if job % 2 == 0 {
                    for round in 0..ROUNDS {
                        sync_round(&*store, &who, round);
                    }
                } else {
                    // A CPU-side task (on the global rayon pool), waited for from this rayon thread.
                    let task = bridge_rayon::spawn_future(async move {
                        for round in 0..ROUNDS {
                            async_round(&*store, &who, round).await;
                        }
                    });
                    task.wait();
                }
            });
        }
    });
    for thread in threads {
        thread.join().expect("a runtime's thread");
    }
    // Everything written is there, read through the unwrapped store.
    let all = bridge_tokio::run_blocking(
        backend
            .store
            .list(Some(&Path::from("shared")))
            .collect::<Vec<_>>(),
    );
    assert_eq!(all.len(), (RUNTIMES + RAYON_JOBS) * ROUNDS);
}

#[test]
fn one_store_shared_by_runtimes_and_rayon_over_http() {
    watchdog("shared HTTP store", WATCHDOG, || {
        shared_by_everyone(Kind::Http)
    });
}

#[test]
fn one_store_shared_by_runtimes_and_rayon_in_memory() {
    watchdog("shared in-memory store", WATCHDOG, || {
        shared_by_everyone(Kind::Memory)
    });
}
