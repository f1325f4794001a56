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
    let err: bridge::TaskError = bridge::spawn(|| -> u8 { panic!("x") }).join().unwrap_err();
    assert!(err.is_panic());
    let _: Option<bridge::CatchUnwind<u8>> = None;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let task: bridge::cpu::Task<u8> = pool.spawn_task(|| 3);
    assert_eq!(task.wait(), 3);
    let limit: bridge::Limit = bridge::cpu::Limit::new(1);
    assert_eq!(limit.spawn_or_wait(|| 4).wait(), 4);
}

#[cfg(feature = "tokio")]
#[test]
fn tokio_paths_resolve() {
    assert_eq!(bridge::route(), bridge::Route::Inline);
    assert_eq!(bridge::run_blocking(async { 1 }), 1);
    assert_eq!(bridge::try_run_blocking(async { 2 }).unwrap(), 2);
    let timeout = std::time::Duration::from_secs(60);
    assert_eq!(
        bridge::try_run_blocking_timeout(async { 3 }, timeout).unwrap(),
        3
    );
    assert_eq!(bridge::run_blocking_local(async { 4 }).unwrap(), 4);
    let err: bridge::BridgeError = bridge::try_run_blocking(async { panic!("x") }).unwrap_err();
    assert!(matches!(err, bridge::BridgeError::Panicked(_)));
    let io: &bridge::IoRuntime = bridge::IoRuntime::global();
    assert_eq!(io.run_blocking(async { 5 }), 5);
    let _ = bridge::rt::RunBlocking::new();
    let slow = async { tokio::time::sleep(std::time::Duration::from_secs(60)).await };
    let limit = std::time::Duration::from_millis(1);
    let err = bridge::try_run_blocking_timeout(slow, limit).unwrap_err();
    let bridge::BridgeError::TimedOut(timeout) = err else {
        panic!("not a timeout: {err:?}");
    };
    let timeout: bridge::rt::Timeout = timeout;
    assert!(!timeout.is_stalled_current_thread());
    // Set to what it is, so that no other test sees a change.
    let threshold: std::time::Duration = bridge::rt::stall_warning();
    assert_eq!(bridge::rt::set_stall_warning(threshold), threshold);
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
