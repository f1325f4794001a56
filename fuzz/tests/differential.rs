//! Differential, at volume: a corpus of futures that each do a thousand or more units of
//! tokio work (channel floods, MiB socket streams, hundreds of timer tasks, lock contention,
//! a private runtime, a nested `run_blocking`, a pooled HTTP client; see
//! `differential/corpus.rs`) must give, through the bridge, the value that tokio's own
//! `Runtime::block_on` gives for the same future and seed on a fresh multi-thread runtime
//! (computed once per future). Volume matters: tokio's cooperative budget is 128 units per
//! task poll, and a shape test that does five operations per call cannot see a nested poll
//! loop that spends it.
//!
//! The contexts and shapes are those of the context-stack harness (`bridge_fuzz::contexts`),
//! each cell one context deep on a thread of its own. What runs:
//!
//! - **the plain shape**, the full product: every future x every entry point x every
//!   context. The entry points are the `run_blocking` family (`run_blocking`,
//!   `try_run_blocking`, `try_run_blocking_timeout` with a 20 s limit), and, in tables of their own, the crossing entry
//!   points: `bridge::spawn_io(work)` taken with `.wait()` and with `.join()`,
//!   `bridge::cpu::spawn_future(work)` the same, `bridge::iter_blocking(stream::once(work))
//!   .next()`, and `bridge::stream::on_cpu(stream::once(work), 1)` read through
//!   `iter_blocking` (with `.next().await` where the call site is async: the sibling
//!   shapes). The contexts: a plain thread, a rayon worker,
//!   `futures::executor::block_on`; a multi-thread runtime's worker task, `block_on` body and
//!   `spawn_blocking` thread; a current-thread runtime's body, task, `spawn_blocking` thread,
//!   `LocalSet` body and `spawn_local` task; a `LocalSet` on a multi-thread runtime: its
//!   `block_on` body, a `spawn_local` task, and `LocalSet::run_until` inside `block_on`;
//! - **the other shapes**, every future once per context, with one entry point per future
//!   out of both families (rotated by the future's index, and differently in each shape, so
//!   that every entry point meets every shape): beside a sibling of the same task ticking on
//!   a timer in a `tokio::join!`, and in the winning branch of a `tokio::select!` against a
//!   timer (the contexts whose call site is async); nested in a future, itself run by
//!   `run_blocking`, that joins such a sibling; from a `Drop` while a panic unwinds; from a
//!   thread-local destructor when the context's thread exits (half the futures register it
//!   before the thread touches tokio, so it runs after tokio's own thread-locals are gone).
//!
//! Each test runs its cells in a child process (this binary, that test only), on threads of
//! their own under a watchdog: a cell that reports nothing within 25 s is recorded as a hang
//! and left behind, and the child exits when all cells are in, so a hang costs neither the
//! test binary nor the other tests. A corpus future polled more than 50,000 times sleeps
//! 1 ms before each further poll, so that a spinning hang does not starve the healthy cells.
//!
//! Where tokio refuses a future (the one that starts a private runtime inside: under
//! `Runtime::block_on` that panics), each cell is compared with the same future through
//! `run_blocking` on a plain thread, where no runtime is entered: the bridge's outcome must not
//! depend on the calling context. One entry point is the exception, by its contract:
//! `spawn_io` runs the future as a task of the shared I/O runtime whatever the context, and
//! tokio refuses there as under `Runtime::block_on`, so its cells of that future must give
//! tokio's own panic, word for word (`refused` in the table). `cpu::spawn_future` only enters
//! the I/O runtime's handle around each poll, where a runtime of the future's own may block:
//! its cells must give the value.
//!
//! A test that finds a cell differing fails with its table: rows are contexts (and entry
//! points, for the plain shape), columns are futures, cells `ok`, `refused`, `hang`, `panic[n]`,
//! `error[n]` (a typed error other than a panic), `wrong[n]`, with the messages and the
//! got-vs-want values in numbered notes below. `BRIDGE_DIFF_TABLE=1` prints every table,
//! passing or not:
//!
//! ```text
//! BRIDGE_DIFF_TABLE=1 cargo test -p bridge-fuzz --test differential -- --nocapture
//! ```

#[path = "differential/check.rs"]
mod check;
// bridge-tokio's test fixtures, for the child process (`common::child`).
#[path = "../../bridge-tokio/tests/common/mod.rs"]
mod common;
#[path = "differential/corpus.rs"]
mod corpus;

use bridge_fuzz::contexts::{Ctx, Shape, watchdog};
use check::{EntryPoint, check, plain, shaped};
use std::time::Duration;

// The contexts of the plain-shape tests, in four groups (a table each).
const NO_RUNTIME: &[Ctx] = &[Ctx::Thread, Ctx::Rayon, Ctx::FuturesExecutor];
const MULTI_THREAD: &[Ctx] = &[Ctx::MultiTask, Ctx::MultiBody, Ctx::MultiBlocking];
const CURRENT_THREAD: &[Ctx] = &[
    Ctx::CurrentBody,
    Ctx::CurrentTask,
    Ctx::CurrentBlocking,
    Ctx::CurrentLocalBody,
    Ctx::CurrentLocalTask,
];
const LOCAL_SET_ON_MULTI_THREAD: &[Ctx] =
    &[Ctx::MultiLocalBody, Ctx::MultiLocalTask, Ctx::MultiRunUntil];

const RUN_BLOCKING: &[EntryPoint] = &EntryPoint::RUN_BLOCKING;
const CROSSING: &[EntryPoint] = &EntryPoint::CROSSING;
/// The other shapes rotate over both lists at once: one cell per future and context.
const EVERY: &[EntryPoint] = &EntryPoint::ALL;

#[test]
fn plain_without_a_runtime() {
    check(
        "plain_without_a_runtime",
        "plain shape, no runtime",
        plain(NO_RUNTIME, RUN_BLOCKING),
    );
}

#[test]
fn plain_on_a_multi_thread_runtime() {
    check(
        "plain_on_a_multi_thread_runtime",
        "plain shape, multi-thread runtime",
        plain(MULTI_THREAD, RUN_BLOCKING),
    );
}

#[test]
fn plain_on_a_current_thread_runtime() {
    check(
        "plain_on_a_current_thread_runtime",
        "plain shape, current-thread runtime",
        plain(CURRENT_THREAD, RUN_BLOCKING),
    );
}

#[test]
fn plain_in_a_local_set_on_a_multi_thread_runtime() {
    check(
        "plain_in_a_local_set_on_a_multi_thread_runtime",
        "plain shape, LocalSet on a multi-thread runtime",
        plain(LOCAL_SET_ON_MULTI_THREAD, RUN_BLOCKING),
    );
}

#[test]
fn beside_a_joined_sibling_on_a_timer() {
    check(
        "beside_a_joined_sibling_on_a_timer",
        "beside a join! sibling ticking on a timer",
        shaped(Shape::JoinedSibling, EVERY),
    );
}

#[test]
fn beside_a_selected_sibling_on_a_timer() {
    check(
        "beside_a_selected_sibling_on_a_timer",
        "in a select! branch against a timer",
        shaped(Shape::SelectedSibling, EVERY),
    );
}

#[test]
fn nested_in_a_future_that_joins_a_sibling() {
    check(
        "nested_in_a_future_that_joins_a_sibling",
        "nested in a run_blocking future that joins a ticking sibling",
        shaped(Shape::NestedInJoin, EVERY),
    );
}

#[test]
fn from_a_drop_while_a_panic_unwinds() {
    check(
        "from_a_drop_while_a_panic_unwinds",
        "from a Drop while a panic unwinds",
        shaped(Shape::DropWhileUnwinding, EVERY),
    );
}

#[test]
fn from_a_thread_local_destructor_at_thread_exit() {
    check(
        "from_a_thread_local_destructor_at_thread_exit",
        "from a thread-local destructor at thread exit",
        shaped(Shape::ThreadLocalDestructor, EVERY),
    );
}

// The crossing entry points (`spawn_io`, `cpu::spawn_future`, `iter_blocking`,
// `stream::on_cpu`) in the plain shape; the other shapes above take them in their turn.

#[test]
fn crossing_plain_without_a_runtime() {
    check(
        "crossing_plain_without_a_runtime",
        "crossing entry points, plain shape, no runtime",
        plain(NO_RUNTIME, CROSSING),
    );
}

#[test]
fn crossing_plain_on_a_multi_thread_runtime() {
    check(
        "crossing_plain_on_a_multi_thread_runtime",
        "crossing entry points, plain shape, multi-thread runtime",
        plain(MULTI_THREAD, CROSSING),
    );
}

#[test]
fn crossing_plain_on_a_current_thread_runtime() {
    check(
        "crossing_plain_on_a_current_thread_runtime",
        "crossing entry points, plain shape, current-thread runtime",
        plain(CURRENT_THREAD, CROSSING),
    );
}

#[test]
fn crossing_plain_in_a_local_set_on_a_multi_thread_runtime() {
    check(
        "crossing_plain_in_a_local_set_on_a_multi_thread_runtime",
        "crossing entry points, plain shape, LocalSet on a multi-thread runtime",
        plain(LOCAL_SET_ON_MULTI_THREAD, CROSSING),
    );
}

/// On a multi-thread runtime's worker the bridge polls a future once in place before it
/// leaves the scheduler, and during that poll the worker's runtime is entered, so sync code
/// that starts a runtime of its own in the very first poll is refused there (the corpus's
/// private runtime starts after its first await). Wrapped by the caller in
/// `block_in_place`, the same future runs: the worker has left its runtime before the call.
#[test]
fn a_private_runtime_in_the_first_poll_on_a_worker_under_block_in_place() {
    let what = "a private runtime under block_in_place";
    let got = watchdog(what, Duration::from_secs(30), || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            tokio::spawn(async {
                tokio::task::block_in_place(|| {
                    bridge_tokio::run_blocking(async {
                        let private = tokio::runtime::Builder::new_current_thread()
                            .enable_all()
                            .build()
                            .unwrap();
                        let n = private.block_on(async {
                            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                            tokio::spawn(async { 41 }).await.unwrap()
                        });
                        drop(private);
                        n + 1
                    })
                })
            })
            .await
            .unwrap()
        })
    });
    assert_eq!(got, 42);
}
