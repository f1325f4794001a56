//! The arms of bridge-core's state machines, for the coverage count (see `__coverage`).
//!
//! Every arm marked with `arm!` in this crate is in [`ARMS`] (the macro refuses a name that
//! is not), and `.ci/loom-coverage` fails on every name here that no model reached. The
//! arms marked `std` are those loom cannot reach; the comment says why, and the std tests
//! (mostly `tests/stress.rs`) reach them.

#[cfg(any(bridge_loom, bridge_coverage))]
use crate::__coverage::Decl;

/// Every arm of the oneshot, the parker and `block_on`.
#[cfg(any(bridge_loom, bridge_coverage))]
pub const ARMS: &[Decl] = &[
    // The sender's last step (`send`, or the sender's drop).
    // `delivered` counts every send that the receiver will see, `wakes` those that also
    // woke a waiting receiver.
    Decl::loom("oneshot.send.delivered"),
    Decl::loom("oneshot.send.wakes"),
    Decl::loom("oneshot.send.receiver_gone"),
    Decl::loom("oneshot.send.abandoned"),
    Decl::loom("oneshot.sender_drop.delivered"),
    Decl::loom("oneshot.sender_drop.wakes"),
    Decl::loom("oneshot.sender_drop.receiver_gone"),
    Decl::loom("oneshot.sender_drop.abandoned"),
    Decl::loom("oneshot.finish.empty_lost"),
    Decl::loom("oneshot.finish.receiving_lost"),
    // try_recv
    Decl::loom("oneshot.try_recv.message"),
    Decl::loom("oneshot.try_recv.closed"),
    Decl::loom("oneshot.try_recv.empty"),
    Decl::loom("oneshot.try_recv.receiving"),
    Decl::loom("oneshot.try_recv.unparking"),
    // The blocking receive (recv_blocking, recv_timeout, recv_deadline): spin, register, park.
    Decl::loom("oneshot.wait.spin"),
    Decl::loom("oneshot.wait.no_spin"),
    Decl::loom("oneshot.wait.message_early"),
    Decl::loom("oneshot.wait.closed_early"),
    Decl::loom("oneshot.wait.register"),
    Decl::loom("oneshot.wait.register_lost"),
    Decl::loom("oneshot.wait.reclaim"),
    Decl::loom("oneshot.wait.reclaim_lost"),
    Decl::loom("oneshot.wait.unparking_early"),
    Decl::loom("oneshot.wait.unparked"),
    // loom's timed park never returns before its deadline (it yields, then expires).
    Decl::std("oneshot.wait.deadline_early"),
    Decl::loom("oneshot.wait.expired"),
    Decl::loom("oneshot.wait.expired_lost"),
    Decl::loom("oneshot.wait.unparking_late"),
    Decl::loom("oneshot.wait.message"),
    Decl::loom("oneshot.wait.closed"),
    Decl::loom("oneshot.wait.spurious"),
    Decl::loom("oneshot.wait.wake_displaced"),
    Decl::loom("oneshot.wait_out_unparking.yield"),
    // poll
    Decl::loom("oneshot.poll.message"),
    Decl::loom("oneshot.poll.closed"),
    Decl::loom("oneshot.poll.register"),
    Decl::loom("oneshot.poll.register_lost"),
    // A re-poll while registered: the registration is renewed (with the old waker when it
    // wakes the same task, else a clone of the new one; the models tell those two apart
    // by counting the clones, `tests/loom.rs` `repoll_same_waker_vs_send`).
    Decl::loom("oneshot.poll.reregister"),
    Decl::loom("oneshot.poll.reregister_lost"),
    Decl::loom("oneshot.poll.reclaim_lost"),
    Decl::loom("oneshot.poll.unparking"),
    // The receiver's drop and abandon.
    Decl::loom("oneshot.receiver_drop.empty"),
    Decl::loom("oneshot.receiver_drop.message"),
    Decl::loom("oneshot.receiver_drop.closed"),
    Decl::loom("oneshot.abandon.empty"),
    Decl::loom("oneshot.abandon.message"),
    Decl::loom("oneshot.abandon.closed"),
    Decl::loom("oneshot.release.empty_lost"),
    Decl::loom("oneshot.release.reclaim"),
    Decl::loom("oneshot.release.reclaim_lost"),
    Decl::loom("oneshot.release.unparking"),
    // The parker (block_on's wake flag).
    Decl::loom("parker.unpark.first"),
    Decl::loom("parker.unpark.already_set"),
    Decl::loom("parker.park.woken"),
    Decl::loom("parker.park.parks"),
    Decl::loom("parker.park.spurious"),
    Decl::loom("parker.reset.clean"),
    // loom builds make a fresh flag per call (no thread cache), so no wake-up is ever stale.
    Decl::std("parker.reset.stale"),
    // block_on
    Decl::loom("block_on.ready"),
    Decl::loom("block_on.parks"),
    Decl::loom("block_on.yields"),
    Decl::loom("block_on.expired"),
    // A timed park (`block_on_deadline`).
    Decl::loom("parker.park_deadline.woken"),
    Decl::loom("parker.park_deadline.woken_at_deadline"),
    Decl::loom("parker.park_deadline.expired"),
];

/// Marks an arm of this crate: `arm!("oneshot.wait.spurious")`. Nothing outside the loom and
/// coverage builds.
#[cfg(any(bridge_loom, bridge_coverage))]
macro_rules! arm {
    ($name:expr) => {
        $crate::__arm!($crate::coverage_arms::ARMS, $name)
    };
}
#[cfg(not(any(bridge_loom, bridge_coverage)))]
macro_rules! arm {
    // The name stays in the expansion: two arms of one `if` are not one block to clippy.
    ($name:expr) => {{
        let _: &str = $name;
    }};
}
pub(crate) use arm;

/// Marks the arm of the sender's last step: `sender_arm!(done, "wakes")` counts
/// `oneshot.send.wakes` for a send and `oneshot.sender_drop.wakes` for a drop.
macro_rules! sender_arm {
    ($done:expr, $arm:literal) => {
        if $done == $crate::oneshot::states::MESSAGE {
            $crate::coverage_arms::arm!(concat!("oneshot.send.", $arm));
        } else {
            $crate::coverage_arms::arm!(concat!("oneshot.sender_drop.", $arm));
        }
    };
}
pub(crate) use sender_arm;

/// Marks the arm of the receiver's release: `oneshot.receiver_drop.*` for a drop,
/// `oneshot.abandon.*` for an abandon.
macro_rules! release_arm {
    ($gone:expr, $arm:literal) => {
        if $gone == $crate::oneshot::states::DISCONNECTED {
            $crate::coverage_arms::arm!(concat!("oneshot.receiver_drop.", $arm));
        } else {
            $crate::coverage_arms::arm!(concat!("oneshot.abandon.", $arm));
        }
    };
}
pub(crate) use release_arm;
