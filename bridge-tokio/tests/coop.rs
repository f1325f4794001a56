//! A future polled by `run_blocking` runs as if on a thread of its own: it never spends the
//! calling task's cooperative budget, and sync code in it may start a runtime of its own.
//!
//! tokio gives a task 128 units of budget per poll; a poll loop nested in that poll that
//! spends them never gets them back, and every tokio resource then answers `Pending` for
//! good. tokio's `block_in_place` stops the budget (tokio's own test
//! `coop_disabled_in_block_in_place_in_block_on` pins it); the bridge must give the same on
//! every route, in every context, including a worker's first poll. Each check here does far
//! more than 128 units in one call, or makes far more than 128 calls from one task poll.
// Not under loom: these use the std build of the bridge (metrics, settings, real runtimes).
#![cfg(not(bridge_loom))]

mod common;

use common::{current_thread, multi_thread, watchdog, work};
use std::time::Duration;

/// Far more budget units than one task poll has: each `recv` of a ready message spends one.
const MESSAGES: u64 = 2_000;

/// Drains a channel filled beforehand: every `recv` is ready at once and spends a unit.
async fn drain() -> u64 {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for n in 0..MESSAGES {
        tx.send(n).unwrap();
    }
    drop(tx);
    let mut sum = 0;
    while let Some(n) = rx.recv().await {
        sum += n;
    }
    sum
}

fn drained() -> u64 {
    MESSAGES * (MESSAGES - 1) / 2
}

/// Sync code in the future that starts a current-thread runtime of its own, as a sync
/// client library does, after the future's first await.
async fn private_runtime() -> u64 {
    tokio::time::sleep(Duration::from_millis(1)).await;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(drain())
}

/// Every check, from the calling context: one call that spends thousands of units, many
/// calls in a row from one poll of the caller, and a private runtime inside.
fn checks() {
    assert_eq!(bridge_tokio::run_blocking(drain()), drained());
    for tag in 0..200 {
        assert_eq!(bridge_tokio::run_blocking(work(tag)), tag);
    }
    assert_eq!(bridge_tokio::run_blocking(private_runtime()), drained());
    let timed = bridge_tokio::try_run_blocking_timeout(drain(), Duration::from_secs(20));
    assert_eq!(timed.unwrap(), drained());
}

#[test]
fn plain_thread() {
    watchdog(60, checks);
}

#[test]
fn multi_thread_block_on_body() {
    watchdog(60, || multi_thread().block_on(async { checks() }));
}

#[test]
fn multi_thread_worker_task() {
    watchdog(60, || {
        multi_thread().block_on(async { tokio::spawn(async { checks() }).await.unwrap() })
    });
}

#[test]
fn multi_thread_local_set_body_and_task() {
    watchdog(60, || {
        let rt = multi_thread();
        tokio::task::LocalSet::new().block_on(&rt, async {
            checks();
            tokio::task::spawn_local(async { checks() }).await.unwrap();
        });
    });
}

#[test]
fn multi_thread_run_until_in_block_on() {
    watchdog(60, || {
        multi_thread().block_on(async {
            tokio::task::LocalSet::new()
                .run_until(async { checks() })
                .await
        })
    });
}

#[test]
fn current_thread_body_and_task() {
    watchdog(60, || {
        current_thread().block_on(async {
            checks();
            tokio::spawn(async { checks() }).await.unwrap();
        })
    });
}

/// The budget is the caller's again once the call returns: a task that makes the calls
/// still yields to its siblings afterwards, and its own resources work.
#[test]
fn the_callers_budget_is_left_as_it_was() {
    watchdog(60, || {
        multi_thread().block_on(async {
            tokio::spawn(async {
                assert_eq!(bridge_tokio::run_blocking(drain()), drained());
                assert_eq!(drain().await, drained());
            })
            .await
            .unwrap();
        })
    });
}

/// On a worker the first poll happens before the worker leaves the scheduler, with its
/// runtime still entered; a caller whose future starts a runtime of its own at once leaves
/// the scheduler first, and the whole call then runs outside the runtime.
#[test]
fn a_private_runtime_in_the_first_poll_on_a_worker_inside_block_in_place() {
    watchdog(60, || {
        multi_thread().block_on(async {
            tokio::spawn(async {
                let n = tokio::task::block_in_place(|| {
                    bridge_tokio::run_blocking(async {
                        let rt = tokio::runtime::Builder::new_current_thread()
                            .build()
                            .unwrap();
                        rt.block_on(async { 5 })
                    })
                });
                assert_eq!(n, 5);
            })
            .await
            .unwrap();
        })
    });
}
