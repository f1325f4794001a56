//! Loops of sequential calls, as programs make them: 300 `run_blocking` calls in a row, each
//! a 1 ms timer and a loopback TCP round trip, from a `#[tokio::main]` body and a
//! `#[tokio::test]` body of both flavours, a worker task, a `LocalSet` body on both
//! flavours, and `spawn_local` tasks on both. Every result is checked.
//!
//! A body that never yields keeps one cooperative budget (128 units) for all its calls: a
//! bridge that let the nested polls spend it would hang at about the 33rd call (four units
//! each), which a shape test making a handful of calls never reaches.
//!
//! Each loop runs in a child process (this binary, that test only) that reports every call;
//! the parent kills the child and fails the test when no call finishes for 10 s, with the
//! number of calls that did.
// Not under loom: these use the std build of the bridge (metrics, settings, real runtimes).
#![cfg(not(bridge_loom))]

mod common;

use common::work;
use std::sync::mpsc;
use std::time::Duration;

/// Calls per loop.
const CALLS: u64 = 300;

/// How long the parent waits for the next call to finish.
const STALL: Duration = Duration::from_secs(10);

const CHILD_VAR: &str = "BRIDGE_LOOPS_CHILD";
const CALL_LINE: &str = "@@call ";
const DONE_LINE: &str = "@@loop done";

/// `CALLS` sequential calls from here, tags from `base`, each result checked and reported.
fn calls(base: u64) {
    for i in 0..CALLS {
        let tag = base + i;
        assert_eq!(bridge_tokio::run_blocking(work(tag)), tag, "call {i}");
        println!("{CALL_LINE}{}", i + 1);
    }
}

/// Ends the child's report: every loop of the test finished.
fn done() {
    println!("{DONE_LINE}");
}

/// In the child process for `test`: true (run the loop here). Elsewhere: runs `test` alone in
/// a child, fails if it stalls or fails, and returns false.
fn in_child(test: &str) -> bool {
    if std::env::var(CHILD_VAR).as_deref() == Ok(test) {
        return true;
    }
    let common::child::Running {
        mut child,
        lines: rx,
        stderr,
    } = common::child::spawn(test, CHILD_VAR);
    let (mut finished, mut done_seen, mut stalled) = (0u64, false, false);
    loop {
        match rx.recv_timeout(STALL) {
            Ok(line) => {
                // The harness may have printed the test's name on the same line.
                if let Some(at) = line.find(CALL_LINE) {
                    finished = line[at + CALL_LINE.len()..].trim().parse().unwrap();
                } else if line.contains(DONE_LINE) {
                    done_seen = true;
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                stalled = true;
                break;
            }
        }
    }
    let status = child.wait().unwrap();
    let stderr = stderr.join().unwrap();
    assert!(
        !stalled,
        "{test}: hang: no call finished for {} s after {finished} calls of a loop of {CALLS}",
        STALL.as_secs()
    );
    assert!(
        status.success() && done_seen,
        "{test}: the child failed ({status}) after {finished} calls of a loop of {CALLS}:\n{stderr}"
    );
    false
}

fn multi_thread() -> tokio::runtime::Runtime {
    common::multi_thread()
}

fn current_thread() -> tokio::runtime::Runtime {
    common::current_thread()
}

#[tokio::main]
async fn tokio_main_multi_thread() {
    calls(1_000);
}

#[tokio::main(flavor = "current_thread")]
async fn tokio_main_current_thread() {
    calls(2_000);
}

#[test]
fn a_tokio_main_body_multi_thread() {
    if in_child("a_tokio_main_body_multi_thread") {
        tokio_main_multi_thread();
        done();
    }
}

#[test]
fn a_tokio_main_body_current_thread() {
    if in_child("a_tokio_main_body_current_thread") {
        tokio_main_current_thread();
        done();
    }
}

#[tokio::test]
async fn a_tokio_test_body_current_thread() {
    if in_child("a_tokio_test_body_current_thread") {
        calls(3_000);
        done();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tokio_test_body_multi_thread() {
    if in_child("a_tokio_test_body_multi_thread") {
        calls(4_000);
        done();
    }
}

/// A task on a worker of a `#[tokio::test]` runtime.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_task_of_a_tokio_test() {
    if in_child("a_worker_task_of_a_tokio_test") {
        tokio::spawn(async { calls(5_000) }).await.unwrap();
        done();
    }
}

#[test]
fn a_local_set_body_current_thread() {
    if in_child("a_local_set_body_current_thread") {
        let rt = current_thread();
        tokio::task::LocalSet::new().block_on(&rt, async { calls(6_000) });
        done();
    }
}

#[test]
fn a_local_set_body_multi_thread() {
    if in_child("a_local_set_body_multi_thread") {
        let rt = multi_thread();
        tokio::task::LocalSet::new().block_on(&rt, async { calls(7_000) });
        done();
    }
}

/// Two `spawn_local` tasks of one `LocalSet`, 300 calls each, awaited together.
fn spawn_local_tasks(rt: &tokio::runtime::Runtime, base: u64) {
    let local = tokio::task::LocalSet::new();
    local.block_on(rt, async {
        let a = tokio::task::spawn_local(async move { calls(base) });
        let b = tokio::task::spawn_local(async move { calls(base + 500) });
        a.await.unwrap();
        b.await.unwrap();
    });
}

#[test]
fn spawn_local_tasks_current_thread() {
    if in_child("spawn_local_tasks_current_thread") {
        spawn_local_tasks(&current_thread(), 8_000);
        done();
    }
}

#[test]
fn spawn_local_tasks_multi_thread() {
    if in_child("spawn_local_tasks_multi_thread") {
        spawn_local_tasks(&multi_thread(), 9_000);
        done();
    }
}
