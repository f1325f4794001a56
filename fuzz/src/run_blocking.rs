//! Fuzz body (3): `bridge_tokio::run_blocking` and its variants at the top of generated
//! stacks of contexts and nested calls.
//!
//! The first byte gives the stack's depth (0 to 4); the next bytes pick each level's
//! context, outermost first:
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

use crate::{Expected, Input, is_expected};
use bridge_tokio::{Route, route, run_blocking};
use std::panic::{self, AssertUnwindSafe};
use std::sync::{OnceLock, mpsc};
use std::time::{Duration, Instant};

const MAX_DEPTH: u8 = 4;
const MAX_CALLS: usize = 8;

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
        .map_while(|_| input.below(12).map(Ctx::from_byte))
        .collect();
    let calls: Vec<u8> = std::iter::from_fn(|| input.below(7))
        .take(MAX_CALLS)
        .collect();
    let (tx, rx) = mpsc::channel();
    let done = tx.clone();
    let want = expected(&stack);
    let leaf: Leaf = Box::new(move || {
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            for (i, &call) in calls.iter().enumerate() {
                make_call(call, want, u32::try_from(i).expect("few calls"));
            }
        }));
        tx.send(Report::Leaf(outcome))
            .expect("the program waits for the leaf");
    });
    let described = format!("{stack:?}");
    let entering = std::thread::spawn(move || {
        let unwound = panic::catch_unwind(AssertUnwindSafe(|| enter(&stack, leaf)));
        drop(done.send(Report::Unwound(unwound)));
    });
    // The program ends when the whole stack has unwound (its runtimes dropped, its threads
    // joined), so that no input leaves work behind for the next one.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut leaf_ran = false;
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Report::Leaf(Ok(()))) => leaf_ran = true,
            Ok(Report::Leaf(Err(payload)) | Report::Unwound(Err(payload))) => {
                panic::resume_unwind(payload)
            }
            Ok(Report::Unwound(Ok(()))) => {
                assert!(
                    leaf_ran,
                    "context stack {described} unwound without its leaf"
                );
                // Also wait for the thread's thread-local destructors (tokio's parker).
                entering
                    .join()
                    .expect("the entering thread caught its panics");
                return;
            }
            Err(_) => panic!("context stack {described} hung"),
        }
    }
}

/// What the thread that enters the stack reports: the leaf's calls, then the unwinding.
enum Report {
    Leaf(std::thread::Result<()>),
    Unwound(std::thread::Result<()>),
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
    TokioLocal,
    TokioLocalOnMulti,
    BlockOn,
    Nested,
}

impl Ctx {
    fn from_byte(b: u8) -> Self {
        [
            Self::Thread,
            Self::Rayon,
            Self::MultiBody,
            Self::MultiTask,
            Self::MultiBlocking,
            Self::CurrentBody,
            Self::CurrentTask,
            Self::CurrentBlocking,
            Self::TokioLocal,
            Self::TokioLocalOnMulti,
            Self::BlockOn,
            Self::Nested,
        ][usize::from(b)]
    }
}

/// The route a call takes at the top of `stack`.
fn expected(stack: &[Ctx]) -> Route {
    stack.iter().fold(Route::Inline, |outer, ctx| match ctx {
        Ctx::Thread | Ctx::Rayon => Route::Inline,
        Ctx::MultiTask => Route::OnWorker,
        // A multi-thread runtime's other threads hand the future to a thread of its own.
        Ctx::MultiBody | Ctx::MultiBlocking | Ctx::TokioLocalOnMulti => Route::Handoff,
        Ctx::CurrentBody | Ctx::CurrentTask | Ctx::TokioLocal => Route::Handoff,
        // A spawn_blocking thread of a current-thread runtime is inside that runtime's
        // context, where block_in_place is not allowed.
        Ctx::CurrentBlocking => Route::Handoff,
        // The future of a call with no runtime, or of a handoff, is polled on a thread no
        // runtime has entered (polled right there again); that of a call in place on a
        // worker, on that worker (after block_in_place).
        Ctx::Nested => match outer {
            Route::OnWorker => Route::OnWorker,
            _ => Route::Inline,
        },
        // Changes nothing about the tokio context.
        Ctx::BlockOn => outer,
    })
}

type Leaf = Box<dyn FnOnce() + Send>;

fn multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a multi-thread runtime")
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime")
}

/// The one-thread rayon pool of stack level `level`. Each level has its own: a stack that
/// entered one pool twice, with a blocked thread between, would deadlock. They are built
/// once per process (a program ends only when its stack has unwound, so they are idle at
/// the next one); a pool per program would leave rayon's teardown running into the next.
fn rayon_pool(level: usize) -> &'static rayon::ThreadPool {
    static POOLS: [OnceLock<rayon::ThreadPool>; MAX_DEPTH as usize] =
        [const { OnceLock::new() }; MAX_DEPTH as usize];
    POOLS[level].get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(move |_| format!("fuzz-level-{level}"))
            .build()
            .expect("a rayon pool")
    })
}

/// Runs `f` on a fresh thread (a runtime cannot be built inside another's context) and
/// waits for it.
fn on_thread(f: impl FnOnce() + Send + 'static) {
    if let Err(payload) = std::thread::spawn(f).join() {
        panic::resume_unwind(payload);
    }
}

/// Enters `stack[0]`, the rest inside it, and runs `leaf` at the top.
fn enter(stack: &[Ctx], leaf: Leaf) {
    let Some((&first, rest)) = stack.split_first() else {
        return leaf();
    };
    let rest_len = rest.len();
    let rest = rest.to_vec();
    let next: Leaf = Box::new(move || enter(&rest, leaf));
    match first {
        Ctx::Thread => on_thread(next),
        Ctx::Rayon => rayon_pool(rest_len).install(next),
        Ctx::MultiBody => on_thread(move || multi_thread().block_on(async move { next() })),
        Ctx::MultiTask => on_thread(move || {
            multi_thread()
                .block_on(async move { tokio::spawn(async move { next() }).await })
                .expect("the task")
        }),
        Ctx::MultiBlocking => on_thread(move || {
            multi_thread()
                .block_on(async move { tokio::task::spawn_blocking(next).await })
                .expect("the blocking task")
        }),
        Ctx::CurrentBody => on_thread(move || current_thread().block_on(async move { next() })),
        Ctx::CurrentTask => on_thread(move || {
            current_thread()
                .block_on(async move { tokio::spawn(async move { next() }).await })
                .expect("the task")
        }),
        Ctx::CurrentBlocking => on_thread(move || {
            current_thread()
                .block_on(async move { tokio::task::spawn_blocking(next).await })
                .expect("the blocking task")
        }),
        Ctx::TokioLocal => on_thread(move || {
            let local = tokio::task::LocalSet::new();
            local
                .block_on(&current_thread(), async move {
                    tokio::task::spawn_local(async move { next() }).await
                })
                .expect("the local task")
        }),
        Ctx::TokioLocalOnMulti => on_thread(move || {
            let local = tokio::task::LocalSet::new();
            local
                .block_on(&multi_thread(), async move {
                    tokio::task::spawn_local(async move { next() }).await
                })
                .expect("the local task")
        }),
        Ctx::BlockOn => bridge_core::block_on(async move { next() }),
        Ctx::Nested => run_blocking(async move { next() }),
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
