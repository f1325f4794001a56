//! What one hop costs in heap allocations, and how long 1,000 concurrent hops take: the hop
//! study's `concurrent-1000` shape, `bridge::spawn(..).await` beside `rayon::spawn` + tokio's
//! oneshot and tokio-rayon, from a task of a tokio multi-thread runtime. A fourth variant,
//! `rayon+oneshot+arc`, adds one shared `Arc<Mutex<..>>` per hop to the oneshot peer: the
//! price of a third allocation, which is what a job's claim cell beside its oneshot cost.
//!
//! `cargo run --release --manifest-path bridge-bench/Cargo.toml --example hop_costs -- [ROUNDS]`
//!
//! Allocations are counted by a counting global allocator around a batch of hops made after
//! a warm-up (so that every pool, queue and thread-local cache has reached its steady state),
//! divided by the hops. The time per hop is the median over `ROUNDS` rounds (default 200) of
//! 1,000 concurrent hops each, the variants interleaved round by round.

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; only a count is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // ORDERING: Relaxed: a statistic, read after the batch is joined.
        ALLOCATIONS.fetch_add(1, Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above, which is the system allocator's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // ORDERING: Relaxed, as in `alloc`.
        ALLOCATIONS.fetch_add(1, Relaxed);
        // SAFETY: as in `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const CONCURRENT: usize = 1_000;

type Hops = fn(usize) -> Pin<Box<dyn Future<Output = usize> + Send>>;

fn bridge(n: usize) -> Pin<Box<dyn Future<Output = usize> + Send>> {
    Box::pin(async move {
        let tasks: Vec<_> = (0..n).map(|i| bridge::spawn(move || i)).collect();
        let mut sum = 0;
        for task in tasks {
            sum += task.await;
        }
        sum
    })
}

fn rayon_oneshot(n: usize) -> Pin<Box<dyn Future<Output = usize> + Send>> {
    Box::pin(async move {
        let receivers: Vec<_> = (0..n)
            .map(|i| {
                let (tx, rx) = tokio::sync::oneshot::channel();
                rayon::spawn(move || {
                    let _ = tx.send(i);
                });
                rx
            })
            .collect();
        let mut sum = 0;
        for rx in receivers {
            sum += rx.await.unwrap();
        }
        sum
    })
}

fn rayon_oneshot_arc(n: usize) -> Pin<Box<dyn Future<Output = usize> + Send>> {
    Box::pin(async move {
        let receivers: Vec<_> = (0..n)
            .map(|i| {
                let (tx, rx) = tokio::sync::oneshot::channel();
                let shared = std::sync::Arc::new(std::sync::Mutex::new(Some(i)));
                let theirs = std::sync::Arc::clone(&shared);
                rayon::spawn(move || {
                    let i = theirs.lock().unwrap().take().unwrap();
                    let _ = tx.send(i);
                });
                (rx, shared)
            })
            .collect();
        let mut sum = 0;
        for (rx, _shared) in receivers {
            sum += rx.await.unwrap();
        }
        sum
    })
}

fn tokio_rayon(n: usize) -> Pin<Box<dyn Future<Output = usize> + Send>> {
    Box::pin(async move {
        let handles: Vec<_> = (0..n).map(|i| tokio_rayon::spawn(move || i)).collect();
        let mut sum = 0;
        for handle in handles {
            sum += handle.await;
        }
        sum
    })
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(200, |r| r.parse().expect("ROUNDS is a number"));
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
    let run = |hops: Hops, n: usize| -> Duration {
        runtime.block_on(async {
            let started = Instant::now();
            let sum = tokio::spawn(hops(n)).await.expect("the hops");
            let took = started.elapsed();
            assert_eq!(sum, n * (n - 1) / 2);
            took
        })
    };
    for (_, hops) in variants {
        for _ in 0..20 {
            run(hops, CONCURRENT);
        }
    }
    println!("variant | allocations per hop | median ns per hop (1,000 concurrent)");
    let mut times = vec![Vec::new(); variants.len()];
    for round in 0..rounds {
        for k in 0..variants.len() {
            let (_, hops) = variants[(round + k) % variants.len()];
            let i = (round + k) % variants.len();
            times[i].push(run(hops, CONCURRENT));
        }
    }
    for (i, (name, hops)) in variants.iter().enumerate() {
        // ORDERING: Relaxed: the batch is joined (block_on returned) before each read.
        let before = ALLOCATIONS.load(Relaxed);
        run(*hops, CONCURRENT);
        let allocations = ALLOCATIONS.load(Relaxed) - before;
        times[i].sort();
        let median = times[i][times[i].len() / 2];
        println!(
            "{name} | {:.2} | {:.0}",
            allocations as f64 / CONCURRENT as f64,
            median.as_nanos() as f64 / CONCURRENT as f64
        );
    }
}
