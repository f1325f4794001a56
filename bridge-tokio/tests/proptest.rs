//! Random context stacks: threads, rayon workers, tokio runtimes of both flavors (bodies,
//! tasks, `spawn_blocking` threads), `LocalSet`s, runtime-free executors and nested
//! `run_blocking` calls, stacked in random order. At the top of each stack `run_blocking`
//! does real work (a timer and a loopback TCP round trip), or panics, and the test checks
//! the value (or the payload), the route `route()` reports, and that nothing hangs.

mod common;

use bridge_tokio::{Route, route, run_blocking};
use common::{current_thread, multi_thread, watchdog, work};
use proptest::prelude::*;
use std::panic::{self, AssertUnwindSafe};

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
    BridgeLocalOnMulti,
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
        Just(Ctx::BridgeLocalOnMulti),
        Just(Ctx::BlockOn),
        Just(Ctx::Nested),
    ]
}

/// The route a call makes in the innermost context of `stack` (entered in order).
fn expected(stack: &[Ctx]) -> Route {
    stack
        .iter()
        .rev()
        .find_map(|ctx| match ctx {
            Ctx::Thread | Ctx::Rayon => Some(Route::Inline),
            Ctx::MultiBody | Ctx::MultiTask | Ctx::MultiBlocking => Some(Route::BlockInPlace),
            Ctx::CurrentBody
            | Ctx::CurrentTask
            | Ctx::CurrentBlocking
            | Ctx::TokioLocalOnCurrent
            | Ctx::TokioLocalOnMulti
            | Ctx::BridgeLocalOnMulti => Some(Route::Handoff),
            // Inside a future that run_blocking drives, a multi-thread runtime is entered
            // where block_in_place is allowed, whichever route the outer call took.
            Ctx::Nested => Some(Route::BlockInPlace),
            // Changes nothing about the tokio context.
            Ctx::BlockOn => None,
        })
        .unwrap_or(Route::Inline)
}

type Leaf = Box<dyn FnOnce() + Send>;

/// Runs `f` on a fresh thread (a runtime cannot be started inside another) and propagates
/// its panic.
fn on_thread(f: impl FnOnce() + Send + 'static) {
    if let Err(payload) = std::thread::spawn(f).join() {
        panic::resume_unwind(payload);
    }
}

/// Enters `stack[0]`, then the rest inside it, then runs `leaf`.
fn enter(stack: Vec<Ctx>, leaf: Leaf) {
    let Some((&first, rest)) = stack.split_first() else {
        return leaf();
    };
    let rest = rest.to_vec();
    let next: Leaf = Box::new(move || enter(rest, leaf));
    match first {
        Ctx::Thread => on_thread(next),
        Ctx::Rayon => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap();
            pool.install(next);
        }
        Ctx::MultiBody => on_thread(move || multi_thread().block_on(async move { next() })),
        Ctx::MultiTask => on_thread(move || {
            multi_thread()
                .block_on(async move { tokio::spawn(async move { next() }).await.unwrap() })
        }),
        Ctx::MultiBlocking => on_thread(move || {
            multi_thread().block_on(async move { tokio::task::spawn_blocking(next).await.unwrap() })
        }),
        Ctx::CurrentBody => on_thread(move || current_thread().block_on(async move { next() })),
        Ctx::CurrentTask => on_thread(move || {
            current_thread()
                .block_on(async move { tokio::spawn(async move { next() }).await.unwrap() })
        }),
        Ctx::CurrentBlocking => on_thread(move || {
            current_thread()
                .block_on(async move { tokio::task::spawn_blocking(next).await.unwrap() })
        }),
        Ctx::TokioLocalOnCurrent => on_thread(move || {
            let local = tokio::task::LocalSet::new();
            local.block_on(&current_thread(), async move {
                tokio::task::spawn_local(async move { next() })
                    .await
                    .unwrap()
            });
        }),
        Ctx::TokioLocalOnMulti => on_thread(move || {
            let local = tokio::task::LocalSet::new();
            local.block_on(&multi_thread(), async move { next() });
        }),
        Ctx::BridgeLocalOnMulti => on_thread(move || {
            let local = bridge_tokio::LocalSet::new();
            local.block_on(&multi_thread(), async move {
                tokio::task::spawn_local(async move { next() })
                    .await
                    .unwrap()
            });
        }),
        Ctx::BlockOn => bridge_core::block_on(async move { next() }),
        Ctx::Nested => run_blocking(async move { next() }),
    }
}

fn check(stack: Vec<Ctx>, panics: bool, tag: u64) -> Result<(), String> {
    let want = expected(&stack);
    let (tx, rx) = std::sync::mpsc::channel();
    let leaf: Leaf = Box::new(move || {
        let outcome = (|| {
            let got = route();
            if got != want {
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
        })();
        tx.send(outcome).unwrap();
    });
    watchdog(60, move || enter(stack, leaf));
    rx.recv().map_err(|_| "the leaf never ran".to_string())?
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_context_stacks(
        stack in proptest::collection::vec(ctx(), 0..5),
        panics in any::<bool>(),
        tag in any::<u32>(),
    ) {
        let quiet = std::panic::take_hook();
        std::panic::set_hook(Box::new(|info| {
            if !info.payload().is::<u64>() {
                eprintln!("{info}");
            }
        }));
        let result = check(stack, panics, u64::from(tag));
        std::panic::set_hook(quiet);
        prop_assert_eq!(result, Ok(()));
    }
}
