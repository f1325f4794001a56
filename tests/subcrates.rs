//! Every path the facade promises resolves to the crate that implements it.

#[test]
fn oneshot_and_block_on_resolve() {
    let (tx, rx) = bridge::oneshot::channel::<u8>();
    let _: Result<(), bridge::oneshot::SendError<u8>> = tx.send(1);
    let _: Result<u8, bridge::oneshot::RecvError> = bridge::block_on(rx);
    let _: Option<bridge::oneshot::TryRecvError> = None;
    let _: Option<bridge::oneshot::RecvTimeoutError> = None;
    let _: Option<bridge::oneshot::Receiver<u8>> = None::<bridge_core::oneshot::Receiver<u8>>;
}

#[cfg(feature = "rayon")]
#[test]
fn rayon_paths_resolve() {
    use bridge::cpu::ThreadPoolExt;

    let task: bridge::Task<u8> = bridge::spawn(|| 1);
    assert_eq!(bridge::block_on(task), 1);
    assert_eq!(bridge::spawn_fifo(|| 2).wait(), 2);
    assert!(!bridge::spawn_cancellable(|flag: bridge::CancelFlag<'_>| flag.is_cancelled()).wait());
    let err: bridge::Error = bridge::spawn(|| -> u8 { panic!("x") }).join().unwrap_err();
    assert!(err.is_panic());
    let _: Option<bridge::CatchUnwind<u8>> = None;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let task: bridge::Task<u8> = pool.spawn_task(|| 3);
    assert_eq!(task.wait(), 3);
    let limit: bridge::cpu::Limit = bridge::cpu::Limit::new(1);
    assert_eq!(limit.spawn_or_wait(|| 4).wait(), 4);
}

#[cfg(feature = "tokio")]
#[test]
fn tokio_paths_resolve() {
    assert_eq!(bridge_tokio::route(), bridge_tokio::Route::Inline);
    assert_eq!(bridge::run_blocking(async { 1 }), 1);
    assert_eq!(bridge::try_run_blocking(async { 2 }).unwrap(), 2);
    let timeout = std::time::Duration::from_secs(60);
    assert_eq!(
        bridge::try_run_blocking_timeout(async { 3 }, timeout).unwrap(),
        3
    );
    let err: bridge::Error = bridge::try_run_blocking(async { panic!("x") }).unwrap_err();
    assert!(err.is_panic());
    let io: &bridge::rt::IoRuntime = bridge::rt::IoRuntime::global();
    let task: bridge::Task<u8> = io.spawn(async { 5 });
    assert_eq!(task.wait(), 5);
    assert_eq!(bridge::spawn_io(async { 6 }).wait(), 6);
    assert_eq!(bridge::block_on(bridge::rt::watched(async { 7 })), 7);
    let slow = async { tokio::time::sleep(std::time::Duration::from_secs(60)).await };
    let limit = std::time::Duration::from_millis(1);
    let err = bridge::try_run_blocking_timeout(slow, limit).unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    // Set to what it is, so that no other test sees a change.
    let config: bridge::Config = bridge::configure();
    bridge::configure().apply();
    assert_eq!(bridge::configure(), config);
    let io_metrics: bridge::IoMetrics = bridge::metrics().io;
    assert!(io_metrics.inline > 0);
}

/// `use bridge::*` brings in no module that hides the user's own `tokio` and `rayon` crates:
/// these paths resolve to the crates (a `bridge::tokio` module would make them fail to
/// compile).
#[cfg(all(feature = "rayon", feature = "tokio"))]
#[test]
fn glob_import_keeps_tokio_and_rayon() {
    #[allow(unused_imports)]
    use bridge::*;

    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    assert_eq!(rt.block_on(async { spawn(|| 5).await }), 5);
    assert_eq!(pool.install(rayon::current_num_threads), 1);
}

/// The crossing API of feature `tokio`: tasks on the I/O runtime, streams driven there, and
/// synchronous iteration over a stream.
#[cfg(feature = "tokio")]
#[test]
fn io_crossing_paths_resolve() {
    use futures::StreamExt;

    let task: bridge::Task<u8> = bridge::spawn_io(async { 1 });
    assert_eq!(task.wait(), 1);
    let err: bridge::Error = bridge::spawn_io(async { panic!("x") }).join().unwrap_err();
    assert!(err.is_panic());
    let _: Option<bridge::Task<u8>> = None::<bridge::Task<u8>>;
    let caught: bridge::CatchUnwind<u8> = bridge::spawn_io(async { 7 }).catch_unwind();
    assert_eq!(bridge::block_on(caught).unwrap(), 7);

    let crossing: bridge::stream::Crossing<u8> =
        bridge::stream::on_io(futures::stream::iter([2, 3]), 1);
    let results: bridge::stream::CaughtCrossing<u8> = crossing.catch_unwind();
    let items: Vec<u8> = bridge::block_on(results.map(Result::unwrap).collect());
    assert_eq!(items, [2, 3]);

    let iter: bridge::IterBlocking<_> = bridge::iter_blocking(futures::stream::iter([4u8, 5]));
    assert_eq!(iter.collect::<Vec<_>>(), [4, 5]);
    let iter: bridge::IterBlocking<_> = bridge::iter_blocking(futures::stream::iter([6u8]));
    assert_eq!(iter.sum::<u8>(), 6);
}

/// The crossing API of feature `rayon`: futures polled on rayon, and streams driven there.
#[cfg(feature = "rayon")]
#[test]
fn cpu_crossing_paths_resolve() {
    use bridge::cpu::ThreadPoolExt;
    use futures::StreamExt;
    use std::sync::Arc;

    let task: bridge::Task<u8> = bridge::cpu::spawn_future(async { 1 });
    assert_eq!(task.wait(), 1);
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap(),
    );
    let task: bridge::Task<Option<usize>> =
        pool.spawn_future_task(async { rayon::current_thread_index() });
    assert_eq!(task.wait(), Some(0));

    let crossing: bridge::stream::Crossing<u8> =
        bridge::stream::on_cpu(futures::stream::iter([2, 3]), 1);
    assert_eq!(bridge::block_on(crossing.collect::<Vec<_>>()), [2, 3]);
}

/// With both halves, the facade's `cpu::spawn_future`, `ThreadPoolExt::spawn_future_task`,
/// `stream::spawn_cpu` and `cpu::io_entered` (not threadbridge-rayon's, which know no tokio)
/// enter the shared I/O runtime in every poll: a tokio timer works inside each.
#[cfg(all(feature = "rayon", feature = "tokio"))]
#[test]
fn cpu_crossing_paths_enter_the_io_runtime() {
    use bridge::cpu::ThreadPoolExt;
    use futures::StreamExt;
    use std::sync::Arc;
    use std::time::Duration;

    async fn nap(n: u8) -> u8 {
        tokio::time::sleep(Duration::from_millis(1)).await;
        n
    }
    assert_eq!(bridge::cpu::spawn_future(nap(1)).wait(), 1);
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap(),
    );
    assert_eq!(pool.spawn_future_task(nap(2)).wait(), 2);
    let naps = futures::stream::iter([3, 4]).then(nap);
    assert_eq!(
        bridge::iter_blocking(bridge::stream::on_cpu(naps, 1)).collect::<Vec<_>>(),
        [3, 4]
    );
    let limit = bridge::cpu::Limit::new(1);
    // `Limit::spawn_future` is a future task as any other: its polls enter the I/O runtime.
    let task = limit.spawn_future(nap(5));
    assert_eq!(task.wait(), 5);
}
