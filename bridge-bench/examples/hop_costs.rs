//! What one hop costs in heap allocations: 1,000 concurrent hops from a task of a tokio
//! multi-thread runtime (the hop study's `concurrent-1000` shape, whose study times them),
//! `bridge::spawn(..).await` beside `rayon::spawn` + tokio's oneshot and tokio-rayon. A fourth
//! variant, `rayon+oneshot+arc`, adds one shared `Arc<Mutex<..>>` per hop to the oneshot peer:
//! the price of a third allocation, which is what a job's claim cell beside its oneshot cost.
//!
//! `cargo run --release --manifest-path bridge-bench/Cargo.toml --example hop_costs`
//!
//! Allocations are counted by a counting global allocator around a batch of hops made after
//! a warm-up (so that every pool, queue and thread-local cache has reached its steady state),
//! divided by the hops.

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; only a count is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // ORDERING: Relaxed: a statistic, read after the batch is joined. The default
        // `realloc` allocates anew through this, so a reallocation counts once.
        ALLOCATIONS.fetch_add(1, Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above, which is the system allocator's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const CONCURRENT: usize = 1_000;

type Hops = fn(usize) -> Pin<Box<dyn Future<Output = usize> + Send>>;

/// Awaits `hops` in order and sums what they return. Each variant starts its hops inside
/// its future, so from the runtime's task.
async fn sum<F: Future<Output = usize>>(hops: Vec<F>) -> usize {
    let mut sum = 0;
    for hop in hops {
        sum += hop.await;
    }
    sum
}

fn bridge(n: usize) -> Pin<Box<dyn Future<Output = usize> + Send>> {
    Box::pin(async move { sum((0..n).map(|i| bridge::spawn(move || i)).collect()).await })
}

fn rayon_oneshot(n: usize) -> Pin<Box<dyn Future<Output = usize> + Send>> {
    let hop = |i| {
        let (tx, rx) = tokio::sync::oneshot::channel();
        rayon::spawn(move || {
            let _ = tx.send(i);
        });
        async move { rx.await.unwrap() }
    };
    Box::pin(async move { sum((0..n).map(hop).collect()).await })
}

fn rayon_oneshot_arc(n: usize) -> Pin<Box<dyn Future<Output = usize> + Send>> {
    let hop = |i| {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let shared = Arc::new(Mutex::new(Some(i)));
        let theirs = Arc::clone(&shared);
        rayon::spawn(move || {
            let i = theirs.lock().unwrap().take().unwrap();
            let _ = tx.send(i);
        });
        async move {
            let _shared = shared;
            rx.await.unwrap()
        }
    };
    Box::pin(async move { sum((0..n).map(hop).collect()).await })
}

fn tokio_rayon(n: usize) -> Pin<Box<dyn Future<Output = usize> + Send>> {
    Box::pin(async move { sum((0..n).map(|i| tokio_rayon::spawn(move || i)).collect()).await })
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let variants: [(&str, Hops); 4] = [
        ("rayon+oneshot+arc", rayon_oneshot_arc),
        ("bridge", bridge),
        ("rayon+tokio-oneshot", rayon_oneshot),
        ("tokio-rayon", tokio_rayon),
    ];
    let run = |hops: Hops| {
        let sum = runtime.block_on(async { tokio::spawn(hops(CONCURRENT)).await });
        assert_eq!(sum.expect("the hops"), CONCURRENT * (CONCURRENT - 1) / 2);
    };
    println!("variant | allocations per hop ({CONCURRENT} concurrent)");
    for (name, hops) in variants {
        for _ in 0..20 {
            run(hops);
        }
        // ORDERING: Relaxed: the batch is joined (block_on returned) before each read.
        let before = ALLOCATIONS.load(Relaxed);
        run(hops);
        let allocations = ALLOCATIONS.load(Relaxed) - before;
        println!("{name} | {:.2}", allocations as f64 / CONCURRENT as f64);
    }
}
