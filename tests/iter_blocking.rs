//! `bridge::iter_blocking`: synchronous code iterates over a stream from every context, at
//! volume (100,000 items, and 100,000 tokio channel receives, which a nested poll loop that
//! spent its task's cooperative budget would hang on), borrowing, nested, and with the
//! stream's panic coming back to the caller.
#![cfg(all(not(bridge_loom), feature = "tokio", feature = "rayon"))]

use futures::stream::{self, StreamExt};
use futures::{Stream, TryStreamExt};
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc;
use std::task::Poll;
use std::time::Duration;

/// Runs `f` on its own thread and fails the test if it does not finish within `secs`.
fn watchdog<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let _ = tx.send(panic::catch_unwind(AssertUnwindSafe(f)));
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(Ok(value)) => {
            worker.join().unwrap();
            value
        }
        Ok(Err(payload)) => panic::resume_unwind(payload),
        Err(_) => panic!("hung: no result within {secs} s"),
    }
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

/// The contexts synchronous code runs in, each with the route `run_blocking` takes there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    /// A `#[tokio::main]` body: a multi-thread runtime's `block_on`.
    MultiThreadBody,
    /// A task on a multi-thread runtime's worker.
    MultiThreadTask,
    /// A task of a current-thread runtime.
    CurrentThreadTask,
    /// A `LocalSet` on a current-thread runtime.
    LocalSet,
    /// A `LocalSet` on a multi-thread runtime (where `block_in_place` panics).
    MultiThreadLocalSet,
    /// A rayon worker.
    Rayon,
    /// A plain thread.
    Plain,
}

/// The contexts of the 100,000-item runs (each item on the handoff route is a round trip
/// to a handoff worker); the others run fewer.
const VOLUME_CONTEXTS: [Context; 4] = [
    Context::MultiThreadBody,
    Context::CurrentThreadTask,
    Context::LocalSet,
    Context::Rayon,
];

const CONTEXTS: [Context; 7] = [
    Context::MultiThreadBody,
    Context::MultiThreadTask,
    Context::CurrentThreadTask,
    Context::LocalSet,
    Context::MultiThreadLocalSet,
    Context::Rayon,
    Context::Plain,
];

impl Context {
    fn route(self) -> bridge_tokio::Route {
        match self {
            Context::MultiThreadTask => bridge_tokio::Route::OnWorker,
            Context::Rayon | Context::Plain => bridge_tokio::Route::Inline,
            _ => bridge_tokio::Route::Handoff,
        }
    }

    /// Runs `f` in this context, checking first that `run_blocking` takes its route there.
    fn run<T: Send + 'static>(self, f: impl FnOnce() -> T + Send + 'static) -> T {
        let route = self.route();
        let f = move || {
            assert_eq!(bridge_tokio::route(), route, "{self:?}");
            f()
        };
        match self {
            Context::MultiThreadBody => multi_thread().block_on(async { f() }),
            Context::MultiThreadTask => {
                let rt = multi_thread();
                rt.block_on(async { tokio::spawn(async { f() }).await.unwrap() })
            }
            Context::CurrentThreadTask => {
                let rt = current_thread();
                rt.block_on(async { tokio::spawn(async { f() }).await.unwrap() })
            }
            Context::LocalSet => {
                let rt = current_thread();
                tokio::task::LocalSet::new().block_on(&rt, async {
                    tokio::task::spawn_local(async { f() }).await.unwrap()
                })
            }
            Context::MultiThreadLocalSet => {
                let rt = multi_thread();
                tokio::task::LocalSet::new().block_on(&rt, async { f() })
            }
            Context::Rayon => bridge::spawn(f).wait(),
            Context::Plain => std::thread::spawn(f).join().unwrap(),
        }
    }
}

/// 100,000 items in the volume contexts, 10,000 in the others.
fn volume(context: Context) -> u64 {
    if VOLUME_CONTEXTS.contains(&context) {
        100_000
    } else {
        10_000
    }
}

#[test]
fn a_hundred_thousand_ready_items_from_every_context() {
    watchdog(120, || {
        for context in CONTEXTS {
            let n = volume(context);
            let (count, sum) = context.run(move || {
                bridge::iter_blocking(stream::iter(0..n)).fold((0u64, 0u64), |(c, s), x| {
                    assert_eq!(x, c, "out of order");
                    (c + 1, s + x)
                })
            });
            assert_eq!(count, n, "{context:?}");
            assert_eq!(sum, n * (n - 1) / 2, "{context:?}");
        }
    });
}

/// A stream of `n` numbers received from a tokio channel that a task of the shared I/O
/// runtime fills: each item is a tokio operation that spends cooperative budget.
fn channel_stream(n: u64) -> impl Stream<Item = u64> + Send + 'static {
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    bridge::rt::IoRuntime::global().handle().spawn(async move {
        for i in 0..n {
            if tx.send(i).await.is_err() {
                return;
            }
        }
    });
    stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|x| (x, rx)) })
}

#[test]
fn a_hundred_thousand_channel_receives_from_every_context_do_not_hang() {
    watchdog(120, || {
        for context in CONTEXTS {
            let n = volume(context);
            let got = context.run(move || {
                let mut expected = 0;
                for x in bridge::iter_blocking(channel_stream(n)) {
                    assert_eq!(x, expected, "out of order");
                    expected += 1;
                }
                expected
            });
            assert_eq!(got, n, "{context:?}");
        }
    });
}

#[test]
fn a_crossing_read_by_sync_code_in_every_context() {
    watchdog(60, || {
        for context in CONTEXTS {
            let got = context.run(|| {
                let items = bridge::stream::on_io(channel_stream(10_000), 8);
                let decoded = bridge::stream::on_cpu(items.map(|x| x * 2), 8);
                bridge::iter_blocking(decoded).collect::<Vec<u64>>()
            });
            assert_eq!(
                got,
                (0..10_000).map(|x| x * 2).collect::<Vec<_>>(),
                "{context:?}"
            );
        }
    });
}

#[test]
fn the_stream_may_borrow_from_the_caller() {
    watchdog(60, || {
        for context in CONTEXTS {
            let n = context.run(|| {
                let words: Vec<String> = (0..1_000).map(|i| i.to_string()).collect();
                // Borrows `words`: not 'static.
                let lens = stream::iter(words.iter().enumerate()).then(|(i, w)| async move {
                    if i % 100 == 0 {
                        tokio::time::sleep(Duration::from_micros(1)).await;
                    }
                    w.len()
                });
                let total: usize = bridge::iter_blocking(lens).sum();
                assert_eq!(total, words.iter().map(String::len).sum::<usize>());
                total
            });
            assert_eq!(n, 2_890, "{context:?}");
        }
    });
}

#[test]
fn nested_iterators_work() {
    watchdog(60, || {
        for context in CONTEXTS {
            let sums = context.run(|| {
                // Each outer item is made by a stream that reads another with iter_blocking.
                let outer = stream::iter(0..20u64).then(|i| async move {
                    bridge::iter_blocking(stream::iter(0..i)).sum::<u64>()
                });
                bridge::iter_blocking(outer).collect::<Vec<_>>()
            });
            assert_eq!(
                sums,
                (0..20u64)
                    .map(|i| i * i.saturating_sub(1) / 2)
                    .collect::<Vec<_>>()
            );
        }
    });
}

fn panics_after(items: u32) -> impl Stream<Item = u32> + Send {
    stream::iter(0..items).chain(stream::poll_fn(|_| -> Poll<Option<u32>> {
        panic!("stream panic")
    }))
}

#[test]
fn the_streams_panic_comes_back_and_ends_the_iterator() {
    watchdog(60, || {
        for context in CONTEXTS {
            context.run(|| {
                let mut items = bridge::iter_blocking(panics_after(2));
                assert_eq!(items.next(), Some(0));
                assert_eq!(items.next(), Some(1));
                let payload = panic::catch_unwind(AssertUnwindSafe(|| items.next())).unwrap_err();
                assert_eq!(payload.downcast_ref::<&str>(), Some(&"stream panic"));
                assert_eq!(items.next(), None, "an item after the panic");

                let mut items = bridge::iter_blocking(panics_after(1));
                assert_eq!(items.try_next().unwrap(), Some(0));
                let err = items.try_next().unwrap_err();
                assert!(err.is_panic(), "{err:?}");
                assert_eq!(items.try_next().unwrap(), None);
            });
        }
    });
}

#[test]
fn an_ended_iterator_stays_ended_and_says_so() {
    let mut items = bridge::iter_blocking(stream::iter([1, 2]));
    assert_eq!(items.size_hint(), (2, Some(2)));
    assert_eq!(items.by_ref().collect::<Vec<_>>(), [1, 2]);
    assert_eq!(items.size_hint(), (0, Some(0)));
    assert_eq!(items.next(), None);
    assert!(format!("{items:?}").starts_with("IterBlocking"));
    // The stream itself, to go on with `.await`.
    let mut rest = bridge::iter_blocking(stream::iter([1, 2, 3]));
    assert_eq!(rest.next(), Some(1));
    let rest: Vec<i32> = bridge::block_on(rest.into_inner().collect());
    assert_eq!(rest, [2, 3]);
    // Errors of a `TryStream` stay items.
    let results = stream::iter([Ok(1), Err("bad"), Ok(3)]).into_stream();
    let all: Vec<Result<i32, &str>> = bridge::iter_blocking(results).collect();
    assert_eq!(all, [Ok(1), Err("bad"), Ok(3)]);
}
