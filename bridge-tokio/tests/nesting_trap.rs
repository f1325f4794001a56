//! tokio's own `nesting` example (tokio's `tests/rt_handle_block_on.rs`, current-thread
//! flavor), run through the bridge: a `Sleep` created in a current-thread runtime's body is
//! bound to that runtime's timer, which nothing drives while its only thread waits in
//! `bridge::run_blocking`. The call never returns; it must not be silent. Past the stall
//! threshold it is counted, and with default features (no `tracing` subscriber) the warning
//! reaches stderr, once per process, past the test harness's capture.
//!
//! The hanging calls run in a child process of this binary, on threads left behind when the
//! child exits: no test here hangs.
#![cfg(not(bridge_loom))]

mod common;

use std::sync::mpsc;
use std::time::{Duration, Instant};

const CHILD_VAR: &str = "BRIDGE_NESTING_TRAP_CHILD";
const DONE: &str = "nesting trap: counted";
const WARNING: &str = "warning: run_blocking: a call made on a current-thread runtime is still \
                       waiting";

/// The shape as users write it: a timer made in the body, then blocked on.
fn the_nesting_example() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let sleep = tokio::time::sleep(Duration::from_millis(10));
        bridge_tokio::run_blocking(sleep);
    });
    unreachable!("the timer of a blocked current-thread runtime fired");
}

#[test]
fn a_timer_of_the_blocked_runtime_is_named_on_stderr_once() {
    if std::env::var(CHILD_VAR).is_ok() {
        bridge_core::settings::set_stall_warning(Duration::from_millis(200));
        let before = bridge_tokio::metrics().stalled_handoffs;
        // Two calls in the trap, each on a thread of its own that never ends.
        for _ in 0..2 {
            std::thread::spawn(the_nesting_example);
        }
        let give_up = Instant::now() + Duration::from_secs(20);
        while bridge_tokio::metrics().stalled_handoffs - before < 2 {
            assert!(Instant::now() < give_up, "the calls were not counted");
            std::thread::sleep(Duration::from_millis(20));
        }
        println!("{DONE}");
        return;
    }

    let common::child::Running {
        mut child,
        lines,
        stderr,
    } = common::child::spawn(
        "a_timer_of_the_blocked_runtime_is_named_on_stderr_once",
        CHILD_VAR,
    );
    let give_up = Instant::now() + Duration::from_secs(40);
    let mut counted = false;
    while let Some(left) = give_up.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) => counted |= line.contains(DONE),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                break;
            }
        }
    }
    let status = child.wait().unwrap();
    let stderr = stderr.join().unwrap();
    assert!(
        status.success() && counted,
        "child: {status}, counted {counted}:\n{stderr}"
    );
    assert_eq!(
        stderr.matches(WARNING).count(),
        1,
        "one warning on stderr for the process:\n{stderr}"
    );
    for part in [
        "tokio::time::sleep or timeout created there",
        "Create the future inside the async block given to run_blocking",
        "await it there",
        "bridge::metrics().io.stalled_handoffs",
    ] {
        assert!(stderr.contains(part), "{part:?} missing from:\n{stderr}");
    }
}
