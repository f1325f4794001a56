//! Random context stacks: threads, rayon workers, tokio runtimes of both flavors (bodies,
//! tasks, `spawn_blocking` threads), `LocalSet`s, runtime-free executors and nested
//! `run_blocking` calls, stacked in random order. At the top of each stack `run_blocking`
//! does real work (a timer and a loopback TCP round trip), or panics, and the test checks
//! the value (or the payload), the route `route()` reports, and that nothing hangs.
//!
//! Each stack also has a random *shape*, the way programs hold the call: plain; every async
//! body of the stack joined with a sibling that ticks on a timer (`join!`); the calls nested
//! in a future that joins such a sibling; the calls in a `Drop` that runs while a panic
//! unwinds; the calls in a thread-local destructor when the innermost thread exits.

mod common;

use bridge_tokio::{Route, route, run_blocking};
use common::{current_thread, in_child, multi_thread, watchdog, work};
use proptest::prelude::*;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Plain,
    /// Every async body of the stack runs its inner part as one branch of a `join!` whose
    /// other branch ticks on a timer until that part is done.
    Siblings,
    /// The calls run inside `run_blocking(async { join!(ticker, calls) })`.
    InJoin,
    /// The calls run in a `Drop` while a panic unwinds through it.
    DropUnwinding,
    /// The calls run in a thread-local destructor when the innermost thread exits.
    ThreadExit,
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just(Shape::Plain),
        Just(Shape::Siblings),
        Just(Shape::InJoin),
        Just(Shape::DropUnwinding),
        Just(Shape::ThreadExit),
    ]
}

/// How a sibling waits: on a tokio timer, or on a wake-up from another thread (for executors
/// with no runtime, where a tokio timer has nobody to drive it).
#[derive(Debug, Clone, Copy)]
enum Tick {
    Timer,
    Thread,
}

/// Ticks until `done`, each tick a wait of 2 ms woken from elsewhere.
async fn ticker(done: Arc<AtomicBool>, tick: Tick) {
    while !done.load(Ordering::Acquire) {
        match tick {
            Tick::Timer => tokio::time::sleep(Duration::from_millis(2)).await,
            Tick::Thread => {
                let (tx, rx) = bridge_core::oneshot::channel();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(2));
                    let _ = tx.send(());
                });
                let _ = rx.await;
            }
        }
    }
}

/// Runs `inner` (synchronous) as one branch of a `join!` with a ticking sibling, or alone.
async fn joined(inner: Leaf, siblings: bool, tick: Tick) {
    if !siblings {
        return inner();
    }
    let done = Arc::new(AtomicBool::new(false));
    let finished = done.clone();
    tokio::join!(ticker(done, tick), async move {
        inner();
        finished.store(true, Ordering::Release);
    });
}

#[derive(Debug, Clone, Copy)]
enum Ctx {
    Thread,
    Rayon,
    MultiBody,
    MultiTask,
    MultiBlocking,
    CurrentBody,
    CurrentTask,
    CurrentBlocking,
    TokioLocalOnCurrent,
    TokioLocalOnMulti,
    TokioLocalTaskOnMulti,
    BlockOn,
    Nested,
}

fn ctx() -> impl Strategy<Value = Ctx> {
    prop_oneof![
        Just(Ctx::Thread),
        Just(Ctx::Rayon),
        Just(Ctx::MultiBody),
        Just(Ctx::MultiTask),
        Just(Ctx::MultiBlocking),
        Just(Ctx::CurrentBody),
        Just(Ctx::CurrentTask),
        Just(Ctx::CurrentBlocking),
        Just(Ctx::TokioLocalOnCurrent),
        Just(Ctx::TokioLocalOnMulti),
        Just(Ctx::TokioLocalTaskOnMulti),
        Just(Ctx::BlockOn),
        Just(Ctx::Nested),
    ]
}

/// The route a call makes in the innermost context of `stack` (entered in order).
fn expected(stack: &[Ctx]) -> Route {
    stack.iter().fold(Route::Inline, |outer, ctx| match ctx {
        Ctx::Thread | Ctx::Rayon => Route::Inline,
        Ctx::MultiTask => Route::OnWorker,
        // A multi-thread runtime's other threads hand the future to a thread of its own.
        Ctx::MultiBody
        | Ctx::MultiBlocking
        | Ctx::TokioLocalOnMulti
        | Ctx::TokioLocalTaskOnMulti => Route::Handoff,
        Ctx::CurrentBody | Ctx::CurrentTask | Ctx::CurrentBlocking | Ctx::TokioLocalOnCurrent => {
            Route::Handoff
        }
        // Inside a future that the bridge polls on a thread no runtime has entered (a call
        // with no runtime, a handoff worker), polled right there; inside one polled in place
        // on a worker (after block_in_place), on that worker again.
        Ctx::Nested => match outer {
            Route::OnWorker => Route::OnWorker,
            _ => Route::Inline,
        },
        // Changes nothing about the tokio context.
        Ctx::BlockOn => outer,
    })
}

type Leaf = Box<dyn FnOnce() + Send>;

/// Runs `f` on a fresh thread (a runtime cannot be started inside another) and propagates
/// its panic.
fn on_thread(f: impl FnOnce() + Send + 'static) {
    if let Err(payload) = std::thread::spawn(f).join() {
        panic::resume_unwind(payload);
    }
}

/// Enters `stack[0]`, then the rest inside it, then runs `leaf`; with `siblings`, every
/// async body joins a ticking sibling.
fn enter(stack: Vec<Ctx>, siblings: bool, leaf: Leaf) {
    let Some((&first, rest)) = stack.split_first() else {
        return leaf();
    };
    let rest = rest.to_vec();
    let next: Leaf = Box::new(move || enter(rest, siblings, leaf));
    match first {
        Ctx::Thread => on_thread(next),
        Ctx::Rayon => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap();
            pool.install(next);
        }
        Ctx::MultiBody => {
            on_thread(move || multi_thread().block_on(joined(next, siblings, Tick::Timer)))
        }
        Ctx::MultiTask => on_thread(move || {
            multi_thread().block_on(async move {
                tokio::spawn(joined(next, siblings, Tick::Timer))
                    .await
                    .unwrap()
            })
        }),
        Ctx::MultiBlocking => on_thread(move || {
            multi_thread().block_on(async move { tokio::task::spawn_blocking(next).await.unwrap() })
        }),
        Ctx::CurrentBody => {
            on_thread(move || current_thread().block_on(joined(next, siblings, Tick::Timer)))
        }
        Ctx::CurrentTask => on_thread(move || {
            current_thread().block_on(async move {
                tokio::spawn(joined(next, siblings, Tick::Timer))
                    .await
                    .unwrap()
            })
        }),
        Ctx::CurrentBlocking => on_thread(move || {
            current_thread()
                .block_on(async move { tokio::task::spawn_blocking(next).await.unwrap() })
        }),
        Ctx::TokioLocalOnCurrent => on_thread(move || {
            let local = tokio::task::LocalSet::new();
            local.block_on(&current_thread(), async move {
                tokio::task::spawn_local(joined(next, siblings, Tick::Timer))
                    .await
                    .unwrap()
            });
        }),
        Ctx::TokioLocalOnMulti => on_thread(move || {
            let local = tokio::task::LocalSet::new();
            local.block_on(&multi_thread(), joined(next, siblings, Tick::Timer));
        }),
        Ctx::TokioLocalTaskOnMulti => on_thread(move || {
            let local = tokio::task::LocalSet::new();
            local.block_on(&multi_thread(), async move {
                tokio::task::spawn_local(joined(next, siblings, Tick::Timer))
                    .await
                    .unwrap()
            });
        }),
        Ctx::BlockOn => bridge_core::block_on(joined(next, siblings, Tick::Thread)),
        Ctx::Nested => run_blocking(joined(next, siblings, Tick::Timer)),
    }
}

/// The calls a leaf makes: the route (unless `want` is `None`), a panicking future if
/// `panics`, then real work.
fn calls(want: Option<Route>, panics: bool, tag: u64) -> Result<(), String> {
    let got = route();
    if want.is_some_and(|want| got != want) {
        return Err(format!("route {got:?}, expected {want:?}"));
    }
    if panics {
        let caught = panic::catch_unwind(AssertUnwindSafe(|| {
            run_blocking(async move {
                work(tag).await;
                panic::panic_any(tag)
            })
        }));
        match caught {
            Err(payload) if payload.downcast_ref::<u64>() == Some(&tag) => {}
            Err(_) => return Err("a different panic came back".into()),
            Ok(()) => return Err("the panic was lost".into()),
        }
    }
    let echoed = run_blocking(work(tag));
    if echoed != tag {
        return Err(format!("echoed {echoed}, expected {tag}"));
    }
    Ok(())
}

type Report = std::sync::mpsc::Sender<Result<(), String>>;

/// Makes the calls when dropped.
struct CallsOnDrop(Option<Route>, bool, u64, Report);

impl Drop for CallsOnDrop {
    fn drop(&mut self) {
        let _ = self.3.send(calls(self.0, self.1, self.2));
    }
}

thread_local! {
    static AT_EXIT: std::cell::RefCell<Option<CallsOnDrop>> = const { std::cell::RefCell::new(None) };
}

fn check(stack: Vec<Ctx>, shape: Shape, panics: bool, tag: u64) -> Result<(), String> {
    let want = expected(&stack);
    // A call in a `join!` inside a `run_blocking` of the innermost context: nested in it.
    let nested = expected(&[&stack[..], &[Ctx::Nested]].concat());
    let (tx, rx) = std::sync::mpsc::channel();
    let leaf: Leaf = Box::new(move || match shape {
        Shape::Plain | Shape::Siblings => tx.send(calls(Some(want), panics, tag)).unwrap(),
        Shape::InJoin => run_blocking(joined(
            Box::new(move || tx.send(calls(Some(nested), panics, tag)).unwrap()),
            true,
            Tick::Timer,
        )),
        Shape::DropUnwinding => {
            let unwound = panic::catch_unwind(AssertUnwindSafe(|| {
                let _calls = CallsOnDrop(Some(want), panics, tag, tx);
                panic::panic_any(0u64);
            }));
            assert!(unwound.is_err());
        }
        // The route there depends on which thread-locals are gone already.
        Shape::ThreadExit => {
            AT_EXIT.with(|slot| *slot.borrow_mut() = Some(CallsOnDrop(None, panics, tag, tx)));
        }
    });
    watchdog(60, move || enter(stack, shape == Shape::Siblings, leaf));
    // A thread-local destructor runs when its thread exits, which for a pool's thread can be
    // after the pool's owner moved on.
    rx.recv_timeout(Duration::from_secs(30))
        .map_err(|_| "the leaf never reported".to_string())?
}

/// Every context, alone and under a plain thread, in every shape: the deterministic matrix
/// beside the random stacks. In a child process, since a shape that aborts (a panic escaping
/// a thread-local destructor or a `Drop` during unwinding) would take the test binary down.
#[test]
fn every_context_in_every_shape() {
    in_child("every_context_in_every_shape", || {
        let contexts = [
            Ctx::Thread,
            Ctx::Rayon,
            Ctx::MultiBody,
            Ctx::MultiTask,
            Ctx::MultiBlocking,
            Ctx::CurrentBody,
            Ctx::CurrentTask,
            Ctx::CurrentBlocking,
            Ctx::TokioLocalOnCurrent,
            Ctx::TokioLocalOnMulti,
            Ctx::TokioLocalTaskOnMulti,
            Ctx::BlockOn,
            Ctx::Nested,
        ];
        let shapes = [
            Shape::Plain,
            Shape::Siblings,
            Shape::InJoin,
            Shape::DropUnwinding,
            Shape::ThreadExit,
        ];
        let quiet = std::panic::take_hook();
        std::panic::set_hook(Box::new(|info| {
            if !info.payload().is::<u64>() {
                eprintln!("{info}");
            }
        }));
        let mut tag = 0;
        for ctx in contexts {
            for shape in shapes {
                for panics in [false, true] {
                    tag += 1;
                    let result = check(vec![ctx], shape, panics, tag);
                    assert_eq!(result, Ok(()), "{ctx:?} {shape:?} panics {panics}");
                }
            }
        }
        std::panic::set_hook(quiet);
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_context_stacks_and_shapes(
        stack in proptest::collection::vec(ctx(), 0..5),
        shape in shape(),
        panics in any::<bool>(),
        tag in any::<u32>(),
    ) {
        let quiet = std::panic::take_hook();
        std::panic::set_hook(Box::new(|info| {
            if !info.payload().is::<u64>() {
                eprintln!("{info}");
            }
        }));
        let result = check(stack, shape, panics, u64::from(tag));
        std::panic::set_hook(quiet);
        prop_assert_eq!(result, Ok(()));
    }
}
