//! Allocation counts: one allocation per channel, none per `block_on` call in steady state.
//!
//! A counting global allocator counts this thread's allocations only, so other test threads
//! do not disturb the numbers.

use bridge_core::{block_on, oneshot};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counter is a
// const-initialized thread-local `Cell`, which itself never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_in(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

/// Poll (registers), send (wakes), take, drop: the use that the allocation test measures.
fn use_channel(tx: oneshot::Sender<[u64; 8]>, mut rx: oneshot::Receiver<[u64; 8]>) {
    let waker = std::task::Waker::noop();
    assert!(
        Pin::new(&mut rx)
            .poll(&mut Context::from_waker(waker))
            .is_pending()
    );
    tx.send([7; 8]).unwrap();
    assert_eq!(rx.try_recv(), Ok([7; 8]));
    drop(rx);
}

#[test]
fn a_channel_is_one_allocation_and_its_use_allocates_nothing() {
    // Debug builds count the arms of the state machines, and an arm's first hit in the
    // process registers it (which allocates): one warm-up round first.
    let (tx, rx) = oneshot::channel();
    use_channel(tx, rx);
    let (mut tx, mut rx) = (None, None);
    assert_eq!(
        allocations_in(|| {
            let (t, r) = oneshot::channel::<[u64; 8]>();
            tx = Some(t);
            rx = Some(r);
        }),
        1
    );
    let (tx, rx) = (tx.unwrap(), rx.unwrap());
    assert_eq!(allocations_in(|| use_channel(tx, rx)), 0);
}

/// Pending once (waking itself), then ready.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = u8;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u8> {
        if std::mem::replace(&mut self.0, true) {
            return Poll::Ready(1);
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[test]
fn block_on_allocates_nothing_in_steady_state() {
    // Warm up the thread's cache of wake flags, to depth two (and the arm counters of
    // debug builds, whose first hits allocate).
    block_on(async { block_on(YieldOnce(false)) });
    assert_eq!(allocations_in(|| assert_eq!(block_on(async { 5 }), 5)), 0);
    assert_eq!(
        allocations_in(|| assert_eq!(block_on(YieldOnce(false)), 1)),
        0
    );
    assert_eq!(
        allocations_in(|| assert_eq!(block_on(async { block_on(YieldOnce(false)) }), 1)),
        0
    );
}
