//! The no-runtime route's table: synchronous callers with no runtime run futures to
//! completion through `bridge::run_blocking` and through the three peers that work there,
//! at every caller count users have, on the futures they hand over. The route's design was
//! chosen from this table (docs/design.md, "The no-runtime route").
//!
//! `cargo run --release --manifest-path bridge-bench/Cargo.toml --example no_runtime_table -- [RUNS] [MILLIS]`
//!
//! - **Callers:** 1 thread, one per CPU, 4x and 32x the CPUs (plain threads), and a rayon
//!   `par_iter` over the global pool.
//! - **Futures:** `ready`; `yield` (4 `yield_now`); `echo` (one 64-byte round trip on a
//!   connection the thread keeps); `fan16` (16 concurrent round trips on 16 kept
//!   connections); `connect` (connect, one round trip, close); `http` (a GET through one
//!   pooled hyper client shared by every thread, 1 KiB replies).
//! - **Peers:** `rt per thread` (a `thread_local!` current-thread runtime); `global` (one
//!   multi-thread runtime, `Handle::block_on`); `background` (one runtime thread every call
//!   hands its future to, like `reqwest::blocking`).
//!
//! Each cell runs every variant for `MILLIS` (400) after a warm-up, the order rotated per
//! run. `TABLE_WORK` and `TABLE_CALLERS` (comma-separated: `echo,http`;
//! `1,cpus,4x,32x,par_iter`) pick cells; `TABLE_FIRST_RUN` offsets the run numbers. It prints
//! a CSV line per run, cell and variant, then the median calls/s per cell with the best
//! peer's ratio to the bridge.

use bridge_bench::echo::{connect, echo, round_trip, round_trips, serve_http, serve_on};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rayon::prelude::*;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::hint::black_box;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Barrier, LazyLock, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio::runtime::{Builder, Handle, Runtime};

/// Each variant's calls/s in one cell, run by run (`None`: a call failed).
type PerVariant = BTreeMap<Variant, Vec<Option<f64>>>;

/// Bytes of an HTTP reply body.
const BODY: usize = 1024;
/// Untimed calls per caller; a call slower than `CALL_LIMIT` failed.
const WARM: u32 = 20;
const CALL_LIMIT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Variant {
    Bridge,
    PerThread,
    Global,
    Background,
}
use Variant::{Background, Bridge, Global, PerThread};
const VARIANTS: [Variant; 4] = [Bridge, PerThread, Global, Background];

impl Variant {
    fn name(self) -> &'static str {
        ["bridge", "rt per thread", "global", "background"][self as usize]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Work {
    Ready,
    Yield,
    Echo,
    Fan16,
    Connect,
    Http,
}
use Work::{Connect, Echo, Fan16, Http, Ready, Yield};
const WORKS: [Work; 6] = [Ready, Yield, Echo, Fan16, Connect, Http];

impl Work {
    fn name(self) -> &'static str {
        ["ready", "yield", "echo", "fan16", "connect", "http"][self as usize]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Callers {
    Threads(usize),
    ParIter,
}

impl Callers {
    fn name(self) -> String {
        match self {
            Callers::Threads(n) => format!("{n} threads"),
            Callers::ParIter => "par_iter".into(),
        }
    }
}

/// One multi-thread runtime with a worker per CPU: the `global` peer.
static GLOBAL: LazyLock<Runtime> = LazyLock::new(|| {
    let rt = Builder::new_multi_thread().enable_all().build();
    rt.expect("a multi-thread runtime")
});

/// One current-thread runtime driven by a thread of its own: the `background` peer.
static BACKGROUND: LazyLock<Handle> = LazyLock::new(|| {
    let rt = Builder::new_current_thread().enable_all().build();
    let rt = rt.expect("a current-thread runtime");
    let handle = rt.handle().clone();
    std::thread::Builder::new()
        .name("background-rt".into())
        .spawn(move || rt.block_on(std::future::pending::<()>()))
        .expect("the background runtime's thread");
    handle
});

thread_local! {
    static PER_THREAD: Runtime = Builder::new_current_thread().enable_all().build().expect("a runtime");
    /// Kept connections, per variant: each is registered with the runtime that drives it.
    static CONNS: RefCell<BTreeMap<Variant, Vec<TcpStream>>> = const { RefCell::new(BTreeMap::new()) };
}

/// Runs `future` by `variant`, from a thread with no runtime.
fn drive<F>(variant: Variant, future: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match variant {
        Bridge => bridge::run_blocking(future),
        PerThread => PER_THREAD.with(|rt| rt.block_on(future)),
        Global => GLOBAL.handle().block_on(future),
        Background => {
            let (tx, rx) = bridge::oneshot::channel();
            BACKGROUND.spawn(async move {
                let _ = tx.send(future.await);
            });
            let output = rx.recv_blocking();
            output.expect("the background runtime runs every task")
        }
    }
}

struct Cell {
    echo: SocketAddr,
    http: String,
    client: Client<HttpConnector, Empty<Bytes>>,
    failed: AtomicU64,
}

async fn in_time<E>(work: impl Future<Output = Result<(), E>>) -> bool {
    matches!(tokio::time::timeout(CALL_LIMIT, work).await, Ok(Ok(())))
}

/// One call: `true` if it did its work within [`CALL_LIMIT`].
fn call(variant: Variant, work: Work, cell: &Cell) -> bool {
    let echo = cell.echo;
    let ok = match work {
        Ready => drive(variant, async { black_box(1u64) == 1 }),
        Yield => drive(variant, async {
            for _ in 0..4 {
                tokio::task::yield_now().await;
            }
            true
        }),
        Echo | Fan16 => {
            let want = if work == Echo { 1 } else { 16 };
            let mut conns = CONNS.with(|c| c.borrow_mut().remove(&variant).unwrap_or_default());
            let (ok, conns) = drive(variant, async move {
                let ok = in_time(round_trips(echo, &mut conns, want, 0)).await;
                (ok, conns)
            });
            if ok {
                CONNS.with(|c| c.borrow_mut().insert(variant, conns));
            }
            ok
        }
        Connect => drive(variant, async move {
            in_time(async {
                let mut conn = connect(echo).await?;
                conn.set_zero_linger()?;
                round_trip(&mut conn, 0, 0).await
            })
            .await
        }),
        Http => {
            let client = cell.client.clone();
            let uri = cell.http.parse().expect("a URI");
            drive(variant, async move {
                in_time(async {
                    let reply = client.get(uri).await.map_err(drop)?;
                    let body = reply.into_body().collect().await.map_err(drop)?.to_bytes();
                    (body.len() == BODY).then_some(()).ok_or(())
                })
                .await
            })
        }
    };
    if !ok {
        cell.failed.fetch_add(1, Relaxed);
    }
    ok
}

struct Outcome {
    calls_per_s: f64,
    p50_us: f64,
    p99_us: f64,
    failed: u64,
}

fn measure(
    variant: Variant,
    work: Work,
    callers: Callers,
    window: Duration,
    servers: &Servers,
) -> Outcome {
    let cell = Cell {
        echo: servers.echo,
        http: format!("http://{}/", servers.http),
        client: Client::builder(TokioExecutor::new()).build_http(),
        failed: AtomicU64::new(0),
    };
    // `go` is set once the window's clock runs, so that no call before it counts.
    let (stop, go) = (AtomicBool::new(false), AtomicBool::new(false));
    let latencies = Mutex::new(Vec::<f32>::new());
    let timed = move |cell: &Cell, lat: &mut Vec<f32>| {
        let start = Instant::now();
        let ok = call(variant, work, cell);
        lat.push(start.elapsed().as_secs_f32() * 1e6);
        ok
    };
    let elapsed = match callers {
        Callers::Threads(n) => {
            let barrier = Barrier::new(n + 1);
            // The scope joins every caller before the clock is read.
            let start = std::thread::scope(|s| {
                for _ in 0..n {
                    s.spawn(|| {
                        let mut lat = Vec::new();
                        let mut ok = (0..WARM).all(|_| call(variant, work, &cell));
                        barrier.wait();
                        // ORDERING: start and stop signals; the results go through the mutex.
                        while !go.load(Relaxed) {
                            std::thread::yield_now();
                        }
                        while ok && !stop.load(Relaxed) {
                            ok = timed(&cell, &mut lat);
                        }
                        latencies.lock().unwrap().extend(lat);
                        CONNS.with(|c| c.borrow_mut().clear());
                    });
                }
                barrier.wait();
                let start = Instant::now();
                go.store(true, Relaxed);
                std::thread::sleep(window);
                stop.store(true, Relaxed);
                start
            });
            start.elapsed()
        }
        Callers::ParIter => {
            let pass = |deadline: Instant| {
                let calls = (0..u32::MAX).into_par_iter().with_min_len(1);
                calls.try_for_each(|_| {
                    let mut lat = Vec::with_capacity(1);
                    if Instant::now() >= deadline || !timed(&cell, &mut lat) {
                        return Err(());
                    }
                    latencies.lock().unwrap().extend(lat);
                    Ok(())
                })
            };
            let _ = pass(Instant::now() + window / 4);
            latencies.lock().unwrap().clear();
            let start = Instant::now();
            let _ = pass(start + window);
            let elapsed = start.elapsed();
            rayon::broadcast(|_| CONNS.with(|c| c.borrow_mut().clear()));
            elapsed
        }
    };
    let mut lat = std::mem::take(&mut *latencies.lock().unwrap());
    lat.sort_by(f32::total_cmp);
    let at = |q: f64| {
        let k = ((lat.len() as f64 - 1.0) * q) as usize;
        f64::from(lat.get(k).copied().unwrap_or(f32::NAN))
    };
    Outcome {
        calls_per_s: lat.len() as f64 / elapsed.as_secs_f64(),
        p50_us: at(0.5),
        p99_us: at(0.99),
        failed: cell.failed.load(Relaxed),
    }
}

struct Servers {
    echo: SocketAddr,
    http: SocketAddr,
    _runtime: Runtime,
}

/// The echo and HTTP servers (the studies' own), on one multi-thread runtime with a worker
/// per CPU.
fn servers() -> Servers {
    let runtime = Builder::new_multi_thread()
        .thread_name("server")
        .enable_all()
        .build();
    let runtime = runtime.expect("the servers' runtime");
    let objects = HashMap::from([(String::new(), Bytes::from(vec![b'x'; BODY]))]);
    let objects = Arc::new(objects);
    let http = move |conn| serve_http(conn, Arc::clone(&objects));
    Servers {
        echo: serve_on(&runtime, "echo-server", echo).expect("the echo server"),
        http: serve_on(&runtime, "http-server", http).expect("the HTTP server"),
        _runtime: runtime,
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let runs: usize = args.next().map_or(3, |a| a.parse().expect("RUNS"));
    let window = Duration::from_millis(args.next().map_or(400, |a| a.parse().expect("MILLIS")));
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let picked = |var: &str, name: &str| {
        std::env::var(var).map_or(true, |list| list.split(',').any(|n| n == name))
    };
    let callers: Vec<Callers> = [
        ("1", Callers::Threads(1)),
        ("cpus", Callers::Threads(cpus)),
        ("4x", Callers::Threads(4 * cpus)),
        ("32x", Callers::Threads(32 * cpus)),
        ("par_iter", Callers::ParIter),
    ]
    .into_iter()
    .filter(|(name, _)| picked("TABLE_CALLERS", name))
    .map(|(_, c)| c)
    .collect();
    let works: Vec<Work> = WORKS
        .into_iter()
        .filter(|w| picked("TABLE_WORK", w.name()))
        .collect();
    let first: usize =
        std::env::var("TABLE_FIRST_RUN").map_or(0, |n| n.parse().expect("TABLE_FIRST_RUN"));
    let servers = servers();
    LazyLock::force(&GLOBAL);
    LazyLock::force(&BACKGROUND);
    let mut medians: BTreeMap<(Callers, Work), PerVariant> = BTreeMap::new();
    println!("run,callers,work,variant,calls_per_s,p50_us,p99_us,failed");
    for run in first..first + runs {
        for &c in &callers {
            for &work in &works {
                for k in 0..VARIANTS.len() {
                    let variant = VARIANTS[(k + run) % VARIANTS.len()];
                    let o = measure(variant, work, c, window, &servers);
                    let (name, w, v) = (c.name(), work.name(), variant.name());
                    let (calls, p50, p99, failed) = (o.calls_per_s, o.p50_us, o.p99_us, o.failed);
                    println!("{run},{name},{w},{v},{calls:.0},{p50:.1},{p99:.1},{failed}");
                    let cell = medians.entry((c, work)).or_default();
                    let runs = cell.entry(variant).or_default();
                    runs.push((o.failed == 0).then_some(o.calls_per_s));
                }
            }
        }
    }
    println!();
    println!(
        "| callers | future | bridge | rt per thread | global | background | best peer / bridge |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for ((c, work), by) in &medians {
        let median = |v: &Variant| -> Option<f64> {
            let mut xs: Vec<f64> = by.get(v)?.iter().copied().collect::<Option<_>>()?;
            xs.sort_by(f64::total_cmp);
            xs.get(xs.len() / 2).copied()
        };
        let cells: Vec<String> = VARIANTS
            .iter()
            .map(|v| median(v).map_or("failed".to_string(), |x| format!("{x:.0}")))
            .collect();
        let best = VARIANTS[1..].iter().filter_map(median).fold(0.0, f64::max);
        let ratio = median(&Bridge).map_or("-".into(), |b| format!("{:.2}", best / b));
        let (c, w) = (c.name(), work.name());
        println!("| {c} | {w} | {} | {ratio} |", cells.join(" | "));
    }
}
