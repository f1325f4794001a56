//! Random context stacks over the harness (`bridge_fuzz::contexts`): threads, rayon workers,
//! tokio runtimes of both flavors (bodies, tasks, `spawn_blocking` threads, `LocalSet`s),
//! runtime-free executors and nested `run_blocking` calls, stacked in random order. At the
//! top of each stack `run_blocking` does real work (a timer and a loopback TCP round trip),
//! or panics, and the test checks the value (or the payload), the route `route()` reports,
//! and that nothing hangs.
//!
//! Each stack also has a random *shape* (`Shape`), the way programs hold the call: plain;
//! every async body of the stack joined with a sibling that ticks on a timer (`join!`); in a
//! `join!` or the winning branch of a `select!` at the top; nested in a future that joins
//! such a sibling; in a `Drop` that runs while a panic unwinds; in a thread-local destructor
//! when the innermost thread exits.

// bridge-tokio's test fixtures: the loopback echo (`work`) and the child process (`in_child`).
#[path = "../../bridge-tokio/tests/common/mod.rs"]
mod common;

use bridge_fuzz::Expected;
use bridge_fuzz::contexts::{BoxFuture, Ctx, Resources, Shape, enter_stack, site, watchdog};
use bridge_tokio::{Route, route, run_blocking};
use common::{in_child, work};
use proptest::prelude::*;
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc;
use std::time::Duration;

/// How often the siblings tick.
const TICK: Duration = Duration::from_millis(2);

/// The calls at the top: the route (unless `want` is `None`), a panicking future if
/// `panics` (its payload must come back), then real work (its value must).
fn calls(want: Option<Route>, panics: bool, tag: u32) -> Result<(), String> {
    let got = route();
    if want.is_some_and(|want| got != want) {
        return Err(format!("route {got:?}, expected {want:?}"));
    }
    if panics {
        let caught = panic::catch_unwind(AssertUnwindSafe(|| {
            run_blocking(async move {
                work(tag.into()).await;
                panic::panic_any(Expected(tag))
            })
        }));
        match caught {
            Err(payload) if payload.downcast_ref::<Expected>() == Some(&Expected(tag)) => {}
            Err(_) => return Err("a different panic came back".into()),
            Ok(()) => return Err("the panic was lost".into()),
        }
    }
    let echoed = run_blocking(work(tag.into()));
    if echoed != u64::from(tag) {
        return Err(format!("echoed {echoed}, expected {tag}"));
    }
    Ok(())
}

/// Enters `stack` (fresh runtimes and pools) and makes the calls there in `shape`, under a
/// 60 s watchdog; the report of a thread-local destructor may come up to 30 s later (for a
/// pool's thread, after the pool's owner moved on).
fn check(stack: Vec<Ctx>, shape: Shape, panics: bool, tag: u32) -> Result<(), String> {
    bridge_fuzz::quiet_expected_panics();
    let want = shape.route(&stack);
    let (tx, rx) = mpsc::channel();
    let call = move || calls(want, panics, tag);
    let at_async_site = move || -> BoxFuture<_> { Box::pin(async move { call() }) };
    let report = move |outcome: Result<Result<(), String>, String>| {
        let _ = tx.send(outcome.and_then(|calls| calls));
    };
    let (top, helper_first) = (stack.last().copied(), tag % 2 == 0);
    let top = site(shape, top, TICK, helper_first, call, at_async_site, report);
    let siblings = (shape == Shape::SiblingsAtEveryLevel).then_some(TICK);
    let what = format!("{stack:?} in shape {shape:?}");
    watchdog(&what, Duration::from_secs(60), move || {
        enter_stack(&stack, Resources::Fresh, siblings, top);
    });
    rx.recv_timeout(Duration::from_secs(30))
        .map_err(|_| "the top never reported".to_string())?
}

/// Whether `shape` exists at the top of `stack` (the sibling shapes need an async top), and
/// the stack has at most one `futures::executor::block_on` (which refuses to run inside
/// another on the same thread).
fn fits(stack: &[Ctx], shape: Shape) -> bool {
    let executors = stack.iter().filter(|&&ctx| ctx == Ctx::FuturesExecutor);
    executors.count() <= 1
        && (!shape.needs_async_top() || stack.last().is_some_and(|ctx| ctx.is_async()))
}

/// Every context, alone, in every shape that fits it, with and without a panicking call:
/// the deterministic matrix beside the random stacks. In a child process, since a shape
/// that aborts (a panic escaping a thread-local destructor or a `Drop` during unwinding)
/// would take the test binary down.
#[test]
fn every_context_in_every_shape() {
    in_child("every_context_in_every_shape", || {
        let mut tag = 0;
        for ctx in Ctx::ALL {
            for shape in Shape::ALL.into_iter().filter(|&s| fits(&[ctx], s)) {
                for panics in [false, true] {
                    tag += 1;
                    let result = check(vec![ctx], shape, panics, tag);
                    assert_eq!(result, Ok(()), "{ctx:?} {shape:?} panics {panics}");
                }
            }
        }
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Random stacks of up to four contexts, in a random shape that fits the top.
    #[test]
    fn random_context_stacks_and_shapes(
        stack in proptest::collection::vec(proptest::sample::select(&Ctx::ALL[..]), 0..5),
        shape in proptest::sample::select(&Shape::ALL[..]),
        panics in any::<bool>(),
        tag in any::<u32>(),
    ) {
        prop_assume!(fits(&stack, shape));
        prop_assert_eq!(check(stack, shape, panics, tag), Ok(()));
    }
}
