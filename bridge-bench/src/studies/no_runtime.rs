//! The no-runtime study: synchronous callers with no runtime run futures to completion through
//! `bridge::run_blocking` and through the peers that work there, at the caller counts users
//! have (1 thread, one per CPU, 4x and 32x the CPUs on plain threads, a rayon `par_iter` over
//! the global pool), on the futures they hand over. The route's design was chosen from this
//! table (docs/design.md, "No runtime").

use super::echo::{
    MESSAGE, connect, echo, round_trip, round_trips, serve_http, serve_on, server_runtime,
};
use super::{CACHED, PUBLISHED_PENALTY, cpus, current_thread, measured, route_note};
use crate::harness::{self, Batch, MISSING, Settings, Variant};
use crate::report::{self, BASELINE, Check, Goal, Judged, Measure, ScenarioReport, find};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::Uri;
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;
use rayon::prelude::*;
use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::hint::black_box;
use std::io;
use std::net::SocketAddr;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio::runtime::{Handle, Runtime};

const YIELDS: u32 = 4;
const FAN_OUT: usize = 16;
/// Bytes of an HTTP reply's body.
const BODY: usize = 1024;
/// Untimed calls per caller before a scenario's rounds.
const WARM_CALLS: u64 = 20;
/// An HTTP call that takes longer failed.
const CALL_LIMIT: Duration = Duration::from_secs(2);
/// The goal: bridge at most this times the best peer's time.
const BEST_PEER_SLACK: f64 = 1.05;

const PER_THREAD: &str = "rt per thread";
const GLOBAL: &str = "global";
const BACKGROUND: &str = "background";

/// A way for a caller with no runtime to drive a future to completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// `bridge::run_blocking`.
    Bridge,
    /// A current-thread runtime kept in a `thread_local!`.
    PerThread,
    /// `Handle::block_on` of a multi-thread runtime with a worker per CPU.
    Global,
    /// `Handle::spawn` on a runtime with one worker, then `recv_blocking` on a bridge oneshot:
    /// the way `reqwest::blocking` works.
    Background,
    /// A current-thread runtime built per call (the run study's).
    PerCall,
}

impl Strategy {
    /// This study's variants.
    const STUDIED: [Self; 4] = [
        Self::Bridge,
        Self::PerThread,
        Self::Global,
        Self::Background,
    ];

    fn name(self) -> &'static str {
        [BASELINE, PER_THREAD, GLOBAL, BACKGROUND, "rt per call"][self as usize]
    }

    /// Runs `future` to completion, `Global` and `Background` on `runtime`; `None` if a
    /// runtime or the spawned task failed.
    pub fn drive<F>(self, runtime: &Handle, future: F) -> Option<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match self {
            Self::Bridge => Some(bridge::run_blocking(future)),
            Self::PerThread => Some(CACHED.with(|rt| rt.block_on(future))),
            Self::Global => Some(runtime.block_on(future)),
            Self::Background => {
                let (tx, rx) = bridge::oneshot::channel();
                drop(runtime.spawn(async move {
                    let _ = tx.send(future.await);
                }));
                rx.recv_blocking().ok()
            }
            Self::PerCall => current_thread().ok().map(|rt| rt.block_on(future)),
        }
    }
}

thread_local! {
    /// This thread's kept connections per studied strategy, each registered with its runtime.
    static CONNS: RefCell<[Vec<TcpStream>; 4]> = RefCell::new(Default::default());
}

fn close_conns() {
    CONNS.with_borrow_mut(|all| all.iter_mut().for_each(Vec::clear));
}

/// What one call does (see [`work_text`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Work {
    Ready,
    Yield,
    Echo,
    Fan16,
    Connect,
    Http,
}

const WORKS: [(&str, Work); 6] = [
    ("ready", Work::Ready),
    ("yield", Work::Yield),
    ("echo", Work::Echo),
    ("fan16", Work::Fan16),
    ("connect", Work::Connect),
    ("http", Work::Http),
];

fn work_text(work: Work) -> String {
    match work {
        Work::Ready => "a future that is ready at its first poll".to_owned(),
        Work::Yield => format!("a future that awaits tokio::task::yield_now() {YIELDS} times"),
        Work::Echo => format!(
            "one {MESSAGE}-byte round trip to the echo server on a connection the calling \
             thread keeps"
        ),
        Work::Fan16 => format!(
            "{FAN_OUT} concurrent {MESSAGE}-byte round trips (join_all) on {FAN_OUT} \
             connections the calling thread keeps"
        ),
        Work::Connect => "connect to the echo server, one round trip, close".to_owned(),
        Work::Http => format!(
            "a GET of {BODY} bytes through one pooled hyper client that every calling thread \
             shares (one client per variant; a call over {CALL_LIMIT:?} failed)"
        ),
    }
}

type HttpClient = Client<HttpConnector, Empty<Bytes>>;

/// The servers and the peers' runtimes.
struct Env {
    echo: SocketAddr,
    http: Uri,
    global: Runtime,
    background: Runtime,
    _servers: Runtime,
}

impl Env {
    fn start() -> io::Result<Self> {
        let servers = server_runtime("server")?;
        let body = Bytes::from(vec![b'x'; BODY]);
        let objects = Arc::new(HashMap::from([(String::new(), body)]));
        let http = serve_on(&servers, "http-server", move |conn| {
            serve_http(conn, Arc::clone(&objects))
        })?;
        Ok(Self {
            echo: serve_on(&servers, "echo-server", echo)?,
            http: format!("http://{http}/")
                .parse()
                .map_err(io::Error::other)?,
            global: harness::runtime(cpus(), "global")?,
            background: harness::runtime(1, "background")?,
            _servers: servers,
        })
    }
}

/// One call of `work` by `s`: `i`, or [`MISSING`] if it failed.
fn call(s: Strategy, env: &Env, client: &HttpClient, work: Work, i: u64) -> u64 {
    let runtime = match s {
        Strategy::Background => env.background.handle(),
        _ => env.global.handle(),
    };
    let echo = env.echo;
    let ok = match work {
        Work::Ready => s.drive(runtime, async move { black_box(i) == i }),
        Work::Yield => s.drive(runtime, async {
            for _ in 0..YIELDS {
                tokio::task::yield_now().await;
            }
            true
        }),
        Work::Echo | Work::Fan16 => {
            let fan_out = if work == Work::Echo { 1 } else { FAN_OUT };
            let mut conns = CONNS.with_borrow_mut(|all| std::mem::take(&mut all[s as usize]));
            let done = s.drive(runtime, async move {
                let ok = round_trips(echo, &mut conns, fan_out, i).await.is_ok();
                (ok, conns)
            });
            done.map(|(ok, conns)| {
                CONNS.with_borrow_mut(|all| all[s as usize] = conns);
                ok
            })
        }
        Work::Connect => s
            .drive(runtime, async move {
                let mut conn = connect(echo).await?;
                conn.set_zero_linger()?;
                round_trip(&mut conn, i, 0).await
            })
            .map(|done| done.is_ok()),
        Work::Http => {
            let (client, uri) = (client.clone(), env.http.clone());
            let done = s.drive(runtime, async move {
                let get = async {
                    let reply = client.get(uri).await.ok()?;
                    let body = reply.into_body().collect().await.ok()?.to_bytes();
                    (body.len() == BODY).then_some(())
                };
                tokio::time::timeout(CALL_LIMIT, get).await.ok().flatten()
            });
            done.map(|done| done.is_some())
        }
    };
    if ok == Some(true) { i } else { MISSING }
}

/// A batch's calls: call `i` returns `i`, or [`MISSING`] if it failed.
type Calls = Arc<dyn Fn(u64) -> u64 + Send + Sync>;

/// Who calls: plain threads kept for a scenario (so that their runtimes and connections last
/// from batch to batch), a batch's calls split between them; or a `par_iter` over rayon's
/// global pool. A batch's time is its wall time, so ns per call is the inverse of throughput.
enum Callers {
    Threads {
        jobs: Vec<mpsc::Sender<(Calls, u64)>>,
        done: mpsc::Receiver<u64>,
        threads: Vec<JoinHandle<()>>,
    },
    ParIter,
}

impl Callers {
    fn threads(count: usize) -> io::Result<Self> {
        let (report, done) = mpsc::channel();
        let (mut jobs, mut threads) = (Vec::new(), Vec::new());
        for k in 0..count {
            let (job, work) = mpsc::channel::<(Calls, u64)>();
            let report = report.clone();
            let thread = std::thread::Builder::new().name(format!("caller-{k}"));
            threads.push(thread.spawn(move || {
                for (calls, n) in work {
                    let mine = (k as u64..n).step_by(count);
                    let sum = catch_unwind(AssertUnwindSafe(|| {
                        mine.fold(0u64, |sum, i| sum.wrapping_add(calls(i)))
                    }));
                    if report.send(sum.unwrap_or(MISSING)).is_err() {
                        break;
                    }
                }
                close_conns();
            })?);
            jobs.push(job);
        }
        Ok(Self::Threads {
            jobs,
            done,
            threads,
        })
    }

    fn count(&self) -> usize {
        match self {
            Self::Threads { threads, .. } => threads.len(),
            Self::ParIter => rayon::current_num_threads(),
        }
    }

    fn batch(&self, calls: &Calls, n: u64) -> Batch {
        let start = Instant::now();
        let checksum = match self {
            Self::Threads { jobs, done, .. } => {
                for job in jobs {
                    job.send((Arc::clone(calls), n)).expect("a calling thread");
                }
                let sums = jobs.iter().map(|_| done.recv().expect("a calling thread"));
                sums.fold(0, u64::wrapping_add)
            }
            Self::ParIter => (0..n)
                .into_par_iter()
                .map(|i| calls(i))
                .reduce(|| 0, u64::wrapping_add),
        };
        Batch {
            elapsed: start.elapsed(),
            checksum,
        }
    }
}

impl Drop for Callers {
    fn drop(&mut self) {
        match self {
            Self::Threads { jobs, threads, .. } => {
                jobs.clear();
                threads.drain(..).for_each(|t| drop(t.join()));
            }
            Self::ParIter => drop(rayon::broadcast(|_| close_conns())),
        }
    }
}

/// Runs the scenarios.
pub fn run(settings: &Settings) -> io::Result<Vec<ScenarioReport>> {
    harness::warm_up_tokio(bridge::rt::IoRuntime::global().handle());
    harness::warm_up_rayon();
    let env = Arc::new(Env::start()?);
    // A third of the rounds: thirty scenarios.
    let settings = Settings {
        rounds: (settings.rounds / 3).max(harness::Settings::quick().rounds),
        ..*settings
    };
    let n = cpus();
    let callers = [
        ("1", 1),
        ("cpus", n),
        ("4x", 4 * n),
        ("32x", 32 * n),
        ("par_iter", 0),
    ];
    let mut reports = Vec::new();
    for (who, count) in callers {
        for (what, work) in WORKS {
            // The names live as long as the process, as every scenario name does.
            let name: &'static str = format!("{who}-{what}").leak();
            reports.push(scenario(name, count, work, &env, &settings)?);
        }
    }
    let summary = summary(&reports);
    if let Some(last) = reports.last_mut() {
        last.notes.extend(summary);
    }
    Ok(reports)
}

/// `count` calling threads, or the `par_iter` with 0.
fn scenario(
    name: &'static str,
    count: usize,
    work: Work,
    env: &Arc<Env>,
    settings: &Settings,
) -> io::Result<ScenarioReport> {
    let callers = match count {
        0 => Callers::ParIter,
        n => Callers::threads(n)?,
    };
    // A runtime per thread strands a client shared between threads: a call waits for a
    // pooled connection whose task lives on another thread's runtime, which nothing drives
    // once that thread has made its last call of the batch.
    let strands = work == Work::Http && callers.count() > 1;
    let mut notes = vec![match count {
        0 => rayon::broadcast(|_| route_note()).swap_remove(0),
        _ => route_note(),
    }];
    if strands {
        notes.push(format!(
            "Not run: {PER_THREAD}, which strands a client shared between threads (a call \
             waits for a pooled connection whose task lives on another thread's runtime, \
             which nothing drives once that thread has made its last call)."
        ));
    }
    let mut variants = Vec::new();
    for s in Strategy::STUDIED {
        if strands && s == Strategy::PerThread {
            continue;
        }
        let (env, client) = (
            Arc::clone(env),
            Client::builder(TokioExecutor::new()).build_http(),
        );
        let calls: Calls = Arc::new(move |i| call(s, &env, &client, work, i));
        let warm_calls = WARM_CALLS * callers.count() as u64;
        if callers.batch(&calls, warm_calls).checksum != harness::sum_below(warm_calls) {
            return Err(io::Error::other(format!("{name}: {} failed", s.name())));
        }
        let callers = &callers;
        variants.push(Variant::new(s.name(), move |n| callers.batch(&calls, n)));
    }
    let who = match count {
        0 => format!(
            "a par_iter over rayon's global pool ({} workers)",
            callers.count()
        ),
        1 => "one plain thread".to_owned(),
        n => format!("{n} plain threads calling at once"),
    };
    let mut goals = Vec::new();
    if count == 1 {
        // The seed's figure: the published penalty's top, 17%.
        let text = "a single caller: bridge::run_blocking at most 1.17x rt per thread";
        goals.push(Goal::new(
            PER_THREAD,
            1.0 / (1.0 + PUBLISHED_PENALTY.1 / 100.0),
            text,
        ));
    }
    let report = ScenarioReport {
        name,
        varied: VARIED.to_owned(),
        fixed: format!(
            "the callers: {who}, none in a runtime; per call: {}. The servers run in this \
             process on 127.0.0.1, on their own multi-thread runtime with 1 worker. {} CPUs.",
            work_text(work),
            cpus(),
        ),
        measure: Measure {
            per: "/call",
            ..Measure::default()
        },
        goals,
        notes,
        ..Default::default()
    };
    let mut report = measured(report, &mut variants, 1, settings, None);
    report.judged.push(Judged::once(
        "bridge::run_blocking at most 1.05x the best peer that works here",
        best_peer(&report),
    ));
    Ok(report)
}

const VARIED: &str = "how a caller with no runtime drives the call's future: \
     bridge::run_blocking (polled on the calling thread with the handle of bridge's shared \
     multi-thread I/O runtime entered; its workers drive the sockets and timers); a \
     current-thread runtime kept per thread in a thread_local! (rt per thread); \
     Handle::block_on of one multi-thread runtime with a worker per CPU (global); \
     Handle::spawn on one runtime with 1 worker while the caller blocks on a bridge oneshot \
     (background, the way reqwest::blocking works). ns per call is a batch's wall time over \
     its calls, the inverse of the callers' throughput.";

/// The judged goal: bridge's median at most [`BEST_PEER_SLACK`] times the fastest peer's.
fn best_peer(report: &ScenarioReport) -> Option<Check> {
    let bridge = find(&report.rows, BASELINE)?;
    let peers = report.rows.iter().filter(|r| r.variant != BASELINE);
    let best = peers.min_by(|a, b| a.ns.median.total_cmp(&b.ns.median))?;
    let r = bridge.ns.median / best.ns.median;
    Some(Check {
        met: r <= BEST_PEER_SLACK,
        value: format!("{r:.2}x"),
        bound: format!("bridge / best peer <= {BEST_PEER_SLACK:.2}x"),
        detail: format!("bridge at {r:.2}x the best peer, {}", best.variant),
    })
}

/// The table of every scenario: bridge's time per call and each peer's over it.
fn summary(reports: &[ScenarioReport]) -> Vec<String> {
    let rows: Vec<Vec<String>> = reports
        .iter()
        .filter_map(|report| {
            let bridge = find(&report.rows, BASELINE)?;
            let mut row = vec![report.name.to_owned(), format!("{:.0}", bridge.ns.median)];
            row.extend(Strategy::STUDIED[1..].iter().map(|s| {
                find(&report.rows, s.name()).map_or("not run".to_owned(), |p| {
                    format!("{:.2}", p.ratio_to_bridge)
                })
            }));
            let best = best_peer(report).map_or("-".to_owned(), |c| c.value);
            Some([row, vec![best]].concat())
        })
        .collect();
    let head = [
        "scenario",
        "bridge ns/call",
        PER_THREAD,
        GLOBAL,
        BACKGROUND,
        "bridge / best",
    ];
    let table = report::table(&head, "---:", &rows);
    vec![
        format!(
            "Summary: bridge's median ns per call, each peer's median over bridge's (below 1: \
             faster), and bridge's over the best peer's (the goal: at most \
             {BEST_PEER_SLACK:.2}x).\n\n{}",
            table.trim_end()
        ),
        WHY.to_owned(),
    ]
}

const WHY: &str = "Why: bridge::run_blocking and global both poll the future on the calling \
     thread while a multi-thread runtime's workers own the sockets: an I/O event wakes a \
     worker, which wakes the caller, two thread wake-ups where rt per thread's caller sleeps \
     in epoll_wait itself. So rt per thread is ahead on I/O at low caller counts and where it \
     works at all: it breaks a client shared between threads. background pays a hand-off per \
     call both ways. On a small VM waking an idle CPU costs a few to tens of µs, so medians \
     move from run to run.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_strategy_runs_every_work_from_threads_and_par_iter() {
        let env = Arc::new(Env::start().unwrap());
        for callers in [Callers::threads(1).unwrap(), Callers::ParIter] {
            for s in Strategy::STUDIED {
                // As in `scenario`.
                let works = WORKS.iter().filter(|(_, w)| {
                    !(s == Strategy::PerThread && *w == Work::Http && callers.count() > 1)
                });
                for &(what, work) in works {
                    let (env, client) = (
                        Arc::clone(&env),
                        Client::builder(TokioExecutor::new()).build_http(),
                    );
                    let calls: Calls = Arc::new(move |i| call(s, &env, &client, work, i));
                    let batch = callers.batch(&calls, 7);
                    assert_eq!(batch.checksum, 21, "{} on {what}", s.name());
                }
            }
        }
    }

    #[test]
    fn a_failed_call_spoils_the_checksum_and_a_panic_does_not_hang() {
        let callers = Callers::threads(3).unwrap();
        let calls: Calls = Arc::new(|i| if i == 4 { MISSING } else { i });
        assert_ne!(callers.batch(&calls, 10).checksum, 45);
        let calls: Calls = Arc::new(|i| if i == 4 { panic!("a call panics") } else { i });
        assert_ne!(callers.batch(&calls, 10).checksum, 45);
        let calls: Calls = Arc::new(|i| i);
        assert_eq!(callers.batch(&calls, 10).checksum, 45);
    }
}
