//! Panics stay between the closure and whoever takes the result: rayon's panic handler never
//! sees one, not from the closure and not from dropping a result nobody wants.
//!
//! Its own test binary: it silences the panic hook while 10,000 tasks panic.

mod common;

use bridge_rayon::ThreadPoolExt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Waker};

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
    common::drain(&pool);

    std::panic::set_hook(default_hook);
    assert_eq!(handled.load(SeqCst), 0, "a panic reached rayon's handler");
    assert_eq!(pool.spawn_task(|| 1).wait(), 1, "the pool stopped working");
}

/// A future polled again after it completed panics, saying so: `Task` does, and so does the
/// non-panicking `CatchUnwind`, whose `Err` is kept for what the closure or the pool did
/// (a panic, a lost job), never for a misuse of the future.
#[test]
fn catch_unwind_polled_after_it_completed_panics_as_a_task_does() {
    fn repoll<F: Future + Unpin>(future: &mut F) -> Box<dyn std::any::Any + Send> {
        let mut cx = Context::from_waker(Waker::noop());
        match catch_unwind(AssertUnwindSafe(|| {
            Pin::new(future).poll(&mut cx).is_ready()
        })) {
            Ok(ready) => panic!("a poll after completion returned (ready: {ready})"),
            Err(payload) => payload,
        }
    }
    fn message(payload: &(dyn std::any::Any + Send)) -> &str {
        payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("")
    }

    let mut task = bridge_rayon::spawn(|| 3u8);
    assert_eq!(futures::executor::block_on(&mut task), 3);
    let by_task = repoll(&mut task);
    assert!(
        message(&*by_task).contains("polled after it completed"),
        "{:?}",
        message(&*by_task)
    );

    // Completed with the value, and with the closure's panic.
    let mut ok = bridge_rayon::spawn(|| 3u8).catch_unwind();
    assert_eq!(futures::executor::block_on(&mut ok).unwrap(), 3);
    let mut failed = bridge_rayon::spawn(|| -> u8 { std::panic::panic_any(9u32) }).catch_unwind();
    let err = futures::executor::block_on(&mut failed).unwrap_err();
    assert_eq!(err.into_panic().downcast_ref::<u32>(), Some(&9));
    for done in [&mut ok, &mut failed] {
        let payload = repoll(done);
        let message = message(&*payload);
        assert!(
            message.contains("CatchUnwind") && message.contains("polled after it completed"),
            "{message:?}"
        );
    }
}

/// A task whose waker panics when woken: the job hands its value over and wakes the waker
/// after the closure's own `catch_unwind`, yet the panic stays there. The pool's panic
/// handler never sees it (on a pool without one, rayon would abort the process), and the
/// value is the task's.
#[test]
fn a_waker_that_panics_when_woken_never_reaches_the_pool() {
    struct PanicsWhenWoken;
    impl std::task::Wake for PanicsWhenWoken {
        fn wake(self: Arc<Self>) {
            panic!("a waker that panics when woken");
        }
    }

    let handled = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&handled);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .panic_handler(move |_| {
            counter.fetch_add(1, SeqCst);
        })
        .build()
        .unwrap();
    // The pool's only thread waits at a gate, so the task is polled (its waker stored)
    // before its job runs.
    let (open, gate) = std::sync::mpsc::channel::<()>();
    let blocker = pool.spawn_task(move || gate.recv().unwrap());
    let mut task = pool.spawn_task(|| 42u32);
    let waker = Waker::from(Arc::new(PanicsWhenWoken));
    assert!(
        Pin::new(&mut task)
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
    );
    open.send(()).unwrap();
    blocker.wait();
    common::drain(&pool);

    assert_eq!(task.try_get(), Some(42));
    assert_eq!(
        handled.load(SeqCst),
        0,
        "the waker's panic reached rayon's handler"
    );
    assert_eq!(pool.spawn_task(|| 1).wait(), 1, "the pool stopped working");
}
