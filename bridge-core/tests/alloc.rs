//! Allocation counts: at most one allocation per channel (none when this thread has freed
//! one of the same size before), none per `block_on` call in steady state.
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
    static CELLS: Cell<isize> = const { Cell::new(0) };
}

/// The layout bridge-core gives the heap cell of a `oneshot::channel::<[u64; 8]>()` (its
/// size rounded up to a multiple of 16, aligned to 16). A test that counts these checks
/// first that a new channel does count one.
fn is_channel_cell(layout: Layout) -> bool {
    layout.size() == 96 && layout.align() == 16
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counter is a
// const-initialized thread-local `Cell`, which itself never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        if is_channel_cell(layout) {
            let _ = CELLS.try_with(|n| n.set(n.get() + 1));
        }
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_channel_cell(layout) {
            let _ = CELLS.try_with(|n| n.set(n.get() - 1));
        }
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
    // On a fresh thread, whose cache is empty.
    std::thread::spawn(|| {
        let mut halves = None;
        assert_eq!(
            allocations_in(|| halves = Some(oneshot::channel::<[u64; 8]>())),
            1
        );
        let (tx, rx) = halves.unwrap();
        // Warm up the arm counters of this use (their first hits allocate) on another
        // channel, then count the use itself.
        let (warm_tx, warm_rx) = oneshot::channel::<[u64; 8]>();
        use_channel(warm_tx, warm_rx);
        assert_eq!(allocations_in(|| use_channel(tx, rx)), 0);
    })
    .join()
    .unwrap();
}

#[test]
fn a_thread_reuses_the_cell_of_the_channel_it_freed_last() {
    std::thread::spawn(|| {
        let (tx, rx) = oneshot::channel::<[u64; 8]>();
        use_channel(tx, rx);
        // The freed cell is kept for the next channel of that size made on this thread ...
        assert_eq!(
            allocations_in(|| {
                let (tx, rx) = oneshot::channel::<[u64; 8]>();
                use_channel(tx, rx);
            }),
            0
        );
        // ... and one of another size class still allocates (the closing arms are warmed up
        // first, on a third size class).
        drop(oneshot::channel::<[u64; 4]>());
        assert_eq!(allocations_in(|| drop(oneshot::channel::<[u64; 2]>())), 1);
        // Two channels alive at once: the slot serves one, the allocator the other.
        assert_eq!(
            allocations_in(|| {
                let first = oneshot::channel::<[u64; 8]>();
                let second = oneshot::channel::<[u64; 8]>();
                drop((first, second));
            }),
            1
        );
    })
    .join()
    .unwrap();
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

/// Uses a channel from its `Drop`; the last one to run reports the channel cells this thread
/// still holds.
struct AtExit(bool);

/// The report of `AtExit(true)`: this thread's live channel cells, or -100 before it ran.
static CELLS_AT_EXIT: std::sync::atomic::AtomicIsize = std::sync::atomic::AtomicIsize::new(-100);

impl Drop for AtExit {
    fn drop(&mut self) {
        let (tx, rx) = oneshot::channel::<[u64; 8]>();
        use_channel(tx, rx);
        if self.0 {
            CELLS_AT_EXIT.store(CELLS.with(Cell::get), std::sync::atomic::Ordering::SeqCst);
        }
    }
}

#[test]
fn channels_in_thread_local_destructors_are_freed_with_or_without_the_cache() {
    // Thread-local destructors run in the reverse order of their registration. `FIRST` is
    // registered before the thread's first channel (which registers the cache), `SECOND`
    // after it: at exit `SECOND` runs while the cache is there (its channel reuses the kept
    // cell, which goes back to the cache), then the cache goes (freeing that cell), then
    // `FIRST` runs without it (its cell comes from the allocator and goes straight back).
    thread_local! {
        static FIRST: Cell<Option<AtExit>> = const { Cell::new(None) };
        static SECOND: Cell<Option<AtExit>> = const { Cell::new(None) };
    }
    // The arm counters of debug builds allocate at their first hit, once per process.
    let (tx, rx) = oneshot::channel::<[u64; 8]>();
    use_channel(tx, rx);
    std::thread::spawn(|| {
        FIRST.set(Some(AtExit(true)));
        let cells = CELLS.with(Cell::get);
        let (tx, rx) = oneshot::channel::<[u64; 8]>();
        assert_eq!(CELLS.with(Cell::get), cells + 1, "the count sees the cell");
        use_channel(tx, rx);
        // The freed cell is kept for this thread's next channel.
        assert_eq!(CELLS.with(Cell::get), cells + 1);
        SECOND.set(Some(AtExit(false)));
    })
    .join()
    .unwrap();
    let cells = CELLS_AT_EXIT.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(cells, 0, "channel cells still live at the thread's exit");
}

#[test]
fn a_thread_keeps_one_cell_per_size_class_and_frees_the_rest() {
    std::thread::spawn(|| {
        let cells = CELLS.with(Cell::get);
        let first = oneshot::channel::<[u64; 8]>();
        let second = oneshot::channel::<[u64; 8]>();
        assert_eq!(
            CELLS.with(Cell::get),
            cells + 2,
            "the count sees both cells"
        );
        // The first cell freed is kept; the second finds the slot taken and is freed.
        drop(first);
        drop(second);
        assert_eq!(CELLS.with(Cell::get), cells + 1);
        // The kept cell serves the next channel, and comes back to the slot after it.
        drop(oneshot::channel::<[u64; 8]>());
        assert_eq!(CELLS.with(Cell::get), cells + 1);
    })
    .join()
    .unwrap();
}
