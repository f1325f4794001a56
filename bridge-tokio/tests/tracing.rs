//! Feature `tracing`: the span current at a `run_blocking` call is current in every poll of
//! its future (and at its drop), on every route; the bridge's own events are logged.
#![cfg(feature = "tracing")]

mod trace_recorder;

use bridge_tokio::{IoRuntime, Route};
use std::time::Duration;
use trace_recorder::{install, seen, seen_prefix};
use tracing::{Level, info_span};

/// A future that logs `tag` before and after a yield (two polls) and when it is dropped.
fn probe(tag: &'static str) -> impl Future<Output = u32> + Send {
    struct OnDrop(&'static str);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            tracing::info!("{} dropped", self.0);
        }
    }
    async move {
        let _on_drop = OnDrop(tag);
        tracing::info!("{tag} first poll");
        tokio::task::yield_now().await;
        tracing::info!("{tag} later poll");
        7
    }
}

/// Every event of `probe(tag)` carried `span`; returns the threads they were logged on.
fn assert_in_span(tag: &str, span: &'static str) -> Vec<Option<String>> {
    let mut threads = Vec::new();
    for what in ["first poll", "later poll", "dropped"] {
        let events = seen(&format!("{tag} {what}"));
        assert_eq!(events.len(), 1, "{tag} {what}: {events:?}");
        assert_eq!(events[0].span, Some(span), "{tag} {what}");
        threads.push(events[0].thread.clone());
    }
    threads
}

fn multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn inline_on_a_plain_thread() {
    install();
    assert_eq!(bridge_tokio::route(), Route::Inline);
    let n = info_span!("inline_caller").in_scope(|| bridge_tokio::run_blocking(probe("inline")));
    assert_eq!(n, 7);
    assert_in_span("inline", "inline_caller");
}

#[test]
fn in_place_on_a_multi_thread_task() {
    install();
    let n = multi_thread().block_on(async {
        tokio::spawn(async {
            assert_eq!(bridge_tokio::route(), Route::OnWorker);
            info_span!("task_caller").in_scope(|| bridge_tokio::run_blocking(probe("task")))
        })
        .await
        .unwrap()
    });
    assert_eq!(n, 7);
    assert_in_span("task", "task_caller");
}

#[test]
fn in_place_in_a_multi_thread_block_on_body() {
    install();
    let n = multi_thread().block_on(async {
        info_span!("body_caller").in_scope(|| bridge_tokio::run_blocking(probe("body")))
    });
    assert_eq!(n, 7);
    assert_in_span("body", "body_caller");
}

#[test]
fn handoff_worker_from_a_current_thread_runtime() {
    install();
    let n = current_thread().block_on(async {
        assert_eq!(bridge_tokio::route(), Route::Handoff);
        info_span!("handoff_caller").in_scope(|| bridge_tokio::run_blocking(probe("handoff")))
    });
    assert_eq!(n, 7);
    let threads = assert_in_span("handoff", "handoff_caller");
    assert_eq!(
        threads[0].as_deref(),
        Some("bridge-handoff"),
        "polled on a handoff worker"
    );
}

#[test]
fn with_a_deadline_the_drop_is_in_the_span_too() {
    install();
    // Timed out on every route: the future is dropped where it runs, inside the span.
    let slow = |tag: &'static str| async move {
        let fut = probe(tag);
        tokio::time::sleep(Duration::from_secs(60)).await;
        fut.await
    };
    let limit = Duration::from_millis(20);
    let inline = info_span!("deadline_inline")
        .in_scope(|| bridge_tokio::try_run_blocking_timeout(slow("never"), limit));
    assert!(inline.is_err_and(|e| e.is_timeout()));
    let handed_off = current_thread().block_on(async {
        info_span!("deadline_handoff").in_scope(|| {
            bridge_tokio::try_run_blocking_timeout(
                async {
                    tracing::info!("deadline handoff polled");
                    tokio::time::sleep(Duration::from_secs(60)).await;
                },
                limit,
            )
        })
    });
    assert!(handed_off.is_err_and(|e| e.is_timeout()));
    assert_eq!(
        seen("deadline handoff polled")[0].span,
        Some("deadline_handoff")
    );
    // A future that finishes before its deadline, polled twice, dropped after.
    let n = current_thread().block_on(async {
        info_span!("deadline_caller").in_scope(|| {
            bridge_tokio::try_run_blocking_timeout(probe("deadline"), Duration::from_secs(30))
        })
    });
    assert_eq!(n.unwrap(), 7);
    assert_in_span("deadline", "deadline_caller");
}

#[test]
fn every_other_form() {
    install();
    let io = IoRuntime::new(1).unwrap();
    info_span!("forms_caller").in_scope(|| {
        assert_eq!(io.spawn(probe("io_runtime")).wait(), 7);
        assert_eq!(bridge_tokio::try_run_blocking(probe("try_run")).unwrap(), 7);
    });
    for tag in ["io_runtime", "try_run"] {
        assert_in_span(tag, "forms_caller");
    }
}

#[test]
fn lost_is_a_warning() {
    install();
    let io = IoRuntime::new(1).unwrap();
    let handle = io.handle().clone();
    // A thread inside the I/O runtime's `enter`: the call hands the future off with that
    // runtime's handle, and the runtime is dropped while the future waits on its timer.
    let caller = std::thread::spawn(move || {
        let _entered = handle.enter();
        info_span!("lost_caller").in_scope(|| {
            bridge_tokio::try_run_blocking(async {
                tokio::time::sleep(Duration::from_secs(30)).await
            })
        })
    });
    std::thread::sleep(Duration::from_millis(100));
    drop(io);
    assert!(caller.join().unwrap().is_err_and(|e| e.is_lost()));
    let lost: Vec<_> = seen_prefix("run_blocking: the runtime running the future shut down")
        .into_iter()
        .filter(|seen| seen.span == Some("lost_caller"))
        .collect();
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert_eq!(lost[0].level, Level::WARN);
}

#[test]
fn a_dying_runtime_moves_the_call_to_the_io_runtime() {
    install();
    let rt = multi_thread();
    let handle = rt.handle().clone();
    rt.shutdown_background();
    std::thread::sleep(Duration::from_millis(100));
    let _guard = handle.enter();
    let n = info_span!("dying_caller").in_scope(|| bridge_tokio::run_blocking(probe("dying")));
    assert_eq!(n, 7);
    assert_in_span("dying", "dying_caller");
    let moved: Vec<_> = seen_prefix("run_blocking: the runtime is shutting down")
        .into_iter()
        .filter(|seen| seen.span == Some("dying_caller"))
        .collect();
    assert_eq!(moved.len(), 1, "{moved:?}");
    assert_eq!(moved[0].level, Level::INFO);
}
