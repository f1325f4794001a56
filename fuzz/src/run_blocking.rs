//! Fuzz body (3): `bridge_tokio::run_blocking` and its variants at the top of generated
//! stacks of contexts and nested calls.
//!
//! The first byte gives the stack's depth (0 to 4); the next bytes pick each level's
//! context of the harness ([`crate::contexts`]), outermost first:
//!
//! | byte % 12 | context                                                           |
//! |-----------|-------------------------------------------------------------------|
//! | 0, 1      | a fresh thread; a rayon worker                                    |
//! | 2, 3, 4   | a multi-thread runtime: its `block_on` body, a task, `spawn_blocking` |
//! | 5, 6, 7   | a current-thread runtime: its `block_on` body, a task, `spawn_blocking` |
//! | 8, 9      | a tokio `LocalSet`'s task on a current-thread runtime; on a multi-thread runtime |
//! | 10, 11    | `bridge_core::block_on`; a nested `run_blocking`                  |
//!
//! The remaining bytes are calls made at the top of the stack, each checked against what
//! the route predicts:
//!
//! | byte % 7 | call                                                                |
//! |----------|---------------------------------------------------------------------|
//! | 0        | `route()`                                                           |
//! | 1        | `run_blocking` of a future that yields, sleeps and returns a tag it borrows |
//! | 2        | `run_blocking` of a future that spawns a tokio task and awaits it  |
//! | 3        | `run_blocking` of a future that panics: the payload comes back      |
//! | 4        | `try_run_blocking` of a panicking future: `Panicked` with the payload |
//! | 5        | `try_run_blocking_timeout`: a borrowing future that never finishes times out, a quick one does not |
//! | 6        | `spawn_io(..).wait()` of a future that yields once: its output      |
//!
//! A program ends when the whole stack has unwound; one that hangs fails after 60 seconds.

use crate::contexts::{Ctx, Resources, Site, enter_stack, route_at_top, watchdog};
use crate::{Expected, Input, is_expected};
use bridge_tokio::{Route, route, run_blocking};
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc;
use std::time::Duration;

const MAX_DEPTH: u8 = 4;
const MAX_CALLS: usize = 8;

/// The contexts in the order of the table above (the checked-in corpus is written in it).
const CONTEXTS: [Ctx; 12] = [
    Ctx::Thread,
    Ctx::Rayon,
    Ctx::MultiBody,
    Ctx::MultiTask,
    Ctx::MultiBlocking,
    Ctx::CurrentBody,
    Ctx::CurrentTask,
    Ctx::CurrentBlocking,
    Ctx::CurrentLocalTask,
    Ctx::MultiLocalTask,
    Ctx::BlockOn,
    Ctx::Nested,
];

/// Runs the program that `data` encodes; panics if a call departs from its contract.
///
/// # Panics
///
/// On the first call whose result differs from what its route predicts, or if the program
/// does not finish within 60 seconds.
///
/// # Examples
///
/// ```
/// // In a current-thread runtime's task: route(), then run_blocking of a sleep.
/// bridge_fuzz::run_blocking::run(&[1, 6, 0, 1]);
/// ```
pub fn run(data: &[u8]) {
    crate::quiet_expected_panics();
    let mut input = Input::new(data);
    let depth = input.below(MAX_DEPTH + 1).unwrap_or(0);
    let stack: Vec<Ctx> = (0..depth)
        .map_while(|_| input.below(12).map(|b| CONTEXTS[usize::from(b)]))
        .collect();
    let calls: Vec<u8> = std::iter::from_fn(|| input.below(7))
        .take(MAX_CALLS)
        .collect();
    let (tx, rx) = mpsc::channel();
    let want = route_at_top(&stack);
    let leaf = Site::Sync(Box::new(move || {
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            for (i, &call) in calls.iter().enumerate() {
                make_call(call, want, u32::try_from(i).expect("few calls"));
            }
        }));
        tx.send(outcome).expect("the program waits for the leaf");
    }));
    let described = format!("context stack {stack:?}");
    // The program ends when the whole stack has unwound (its runtimes dropped, its threads
    // joined, the entering thread's thread-local destructors run: tokio's parker among
    // them), so that no input leaves work behind for the next one.
    watchdog(&described, Duration::from_secs(60), move || {
        enter_stack(&stack, Resources::PoolPerLevel, None, leaf);
    });
    match rx.try_recv() {
        Ok(Ok(())) => {}
        Ok(Err(payload)) => panic::resume_unwind(payload),
        Err(_) => panic!("{described} unwound without its leaf"),
    }
}

/// Makes call `call` (the i-th of the program) and checks its result; `want` is the route.
fn make_call(call: u8, want: Route, i: u32) {
    let tag = 1000 + i;
    match call {
        0 => assert_eq!(route(), want, "call {i}: route()"),
        1 => {
            // The future borrows from this frame (a heap value, so AddressSanitizer sees a use
            // after the call as a use after free).
            let on_stack = Box::new(tag);
            let got = run_blocking(async {
                tokio::task::yield_now().await;
                tokio::time::sleep(Duration::from_micros(100)).await;
                *on_stack
            });
            drop(on_stack);
            assert_eq!(got, tag, "call {i}: run_blocking of a sleep");
        }
        2 => {
            let got = run_blocking(async move { tokio::spawn(async move { tag }).await });
            assert_eq!(got.ok(), Some(tag), "call {i}: run_blocking of a spawn");
        }
        3 => {
            let caught = panic::catch_unwind(|| {
                run_blocking(async move {
                    tokio::task::yield_now().await;
                    panic::panic_any(Expected(tag))
                })
            });
            let payload = caught.expect_err("the work panicked");
            assert!(
                is_expected(payload.as_ref(), tag),
                "call {i}: run_blocking resumed a different panic"
            );
        }
        4 => match bridge_tokio::try_run_blocking(async move { panic::panic_any(Expected(tag)) }) {
            Err(err) if err.is_panic() => assert!(
                is_expected(err.into_panic().as_ref(), tag),
                "call {i}: try_run_blocking returned a different panic"
            ),
            other => panic!("call {i}: try_run_blocking of a panic gave {other:?}"),
        },
        5 => {
            // A borrowing future that times out: the call returns only once it is dropped, so
            // freeing what it borrows right after is sound (AddressSanitizer checks).
            let borrowed = Box::new(tag);
            let never = async {
                let _keep = &borrowed;
                std::future::pending::<u32>().await
            };
            let got = bridge_tokio::try_run_blocking_timeout(never, Duration::from_millis(1));
            drop(borrowed);
            assert!(
                got.as_ref().is_err_and(bridge_core::Error::is_timeout),
                "call {i}: a future that never finishes gave {got:?}"
            );
            let quick = async move { tag };
            let got = bridge_tokio::try_run_blocking_timeout(quick, Duration::from_secs(30));
            assert_eq!(
                got.ok(),
                Some(tag),
                "call {i}: a quick future under a limit"
            );
        }
        6 => {
            // Always on the I/O runtime, whatever the context: a task of it, waited for here.
            let got = bridge_tokio::spawn_io(async move {
                tokio::task::yield_now().await;
                tag
            })
            .wait();
            assert_eq!(got, tag, "call {i}: spawn_io(..).wait()");
        }
        _ => unreachable!("call is below 7"),
    }
}
