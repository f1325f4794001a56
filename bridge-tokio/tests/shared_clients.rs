//! Clients shared across threads: one pooled HTTP client (reqwest) and one object-store
//! client (object_store's `HttpStore`), each created once and used through `run_blocking` by
//! plain threads, rayon workers (a custom pool and the global one), multi-thread runtime
//! tasks and current-thread runtimes, all at once, against a loopback HTTP/1.1 server with
//! keep-alive. Every response's bytes are checked, every context's route is asserted, and
//! the server counts TCP connections so that the tests can tell pooled connections are
//! reused, including connections made by calls from threads that went idle or exited.
//!
//! Where the clients' background tasks (hyper's connection drivers, spawned with
//! `tokio::spawn` into whatever runtime is current when a connection is made) live with the
//! current design:
//!
//! - no runtime (plain thread, rayon worker): the future is polled on the calling thread
//!   with `IoRuntime::global()`'s handle entered, so the drivers it spawns go to the shared
//!   I/O runtime, whose workers always run;
//! - current-thread runtime (body or task): the future is handed to a handoff worker that
//!   polls it with `IoRuntime::global()`'s handle entered, so its drivers live there too;
//! - multi-thread runtime task: polled in place (after `block_in_place`, if it is not ready
//!   at once) with the ambient handle entered, so the drivers live on
//!   that multi-thread runtime, which drives them while it is alive; when it is dropped they
//!   are dropped with it: idle pooled connections are then seen closed and discarded, but a
//!   request in flight on one of them from another thread fails (the ignored
//!   `dropping_a_multi_thread_runtime_fails_requests_in_flight_on_its_connections`).
//!
//! A connection whose driver lives on a runtime that nobody drives (a current-thread
//! runtime cached per thread, idle between calls) would hang the next call that reuses it:
//! `a_connection_whose_driver_sits_on_an_idle_runtime_hangs` shows that this setup detects
//! exactly that, and `connections_made_by_threads_that_go_idle_or_exit_stay_usable` pins
//! that the bridge never puts a driver there.

mod common;

use bridge_tokio::{Route, route, run_blocking};
use bytes::Bytes;
use common::{current_thread, multi_thread, watchdog};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use object_store::path::Path;
use object_store::{ClientOptions, ObjectStoreExt};
use rayon::prelude::*;
use std::any::Any;
use std::cell::RefCell;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex, OnceLock, mpsc};
use std::time::Duration;

// ---------------------------------------------------------------------------------------
// The object and the loopback HTTP/1.1 server.

/// The one object the server serves: 64 KiB of deterministic bytes.
const OBJECT_LEN: usize = 64 * 1024;
const OBJECT_PATH: &str = "data/object.bin";
const LAST_MODIFIED: &str = "Wed, 21 Oct 2015 07:28:00 GMT";
const ETAG: &str = "\"bridge-object-v1\"";

fn object() -> &'static [u8] {
    static OBJECT: OnceLock<Vec<u8>> = OnceLock::new();
    OBJECT.get_or_init(|| {
        (0..OBJECT_LEN as u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
            .collect()
    })
}

/// What one server saw: connections accepted, and requests served on each.
#[derive(Default)]
struct Stats {
    connections: AtomicUsize,
    requests: AtomicUsize,
    /// Requests served per connection, indexed by accept order.
    per_connection: Mutex<Vec<usize>>,
}

impl Stats {
    fn accepted(&self) -> usize {
        let mut per_connection = self.per_connection.lock().unwrap();
        per_connection.push(0);
        self.connections.fetch_add(1, Ordering::SeqCst);
        per_connection.len() - 1
    }

    fn served(&self, connection: usize) {
        self.per_connection.lock().unwrap()[connection] += 1;
        self.requests.fetch_add(1, Ordering::SeqCst);
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    /// Requests served so far on the first `n` connections accepted.
    fn served_on_first(&self, n: usize) -> usize {
        self.per_connection.lock().unwrap()[..n].iter().sum()
    }
}

/// A loopback HTTP/1.1 server with keep-alive; each test starts its own listener (so its
/// counts are its own) on one multi-thread runtime started once per test binary.
struct Server {
    addr: SocketAddr,
    stats: Arc<Stats>,
}

impl Server {
    fn start() -> Self {
        static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
        let runtime = RUNTIME.get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("http-server")
                .enable_all()
                .build()
                .unwrap()
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stats = Arc::new(Stats::default());
        let server_stats = stats.clone();
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let connection = server_stats.accepted();
                let stats = server_stats.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        stats.served(connection);
                        let (delay, response) = (delay_of(&request), respond(&request));
                        async move {
                            tokio::time::sleep(delay).await;
                            Ok::<_, Infallible>(response)
                        }
                    });
                    // A client that goes away mid-request is not the server's failure.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .keep_alive(true)
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self { addr, stats }
    }

    fn base_url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    fn object_url(&self) -> String {
        format!("http://{}/{OBJECT_PATH}", self.addr)
    }
}

/// How long to wait before answering: `?delay_ms=N` in the request, else not at all.
fn delay_of(request: &Request<Incoming>) -> Duration {
    let delay = request
        .uri()
        .query()
        .and_then(|q| q.strip_prefix("delay_ms="));
    Duration::from_millis(delay.and_then(|ms| ms.parse().ok()).unwrap_or(0))
}

/// GET (whole or `Range: bytes=a-b` / `a-` / `-n`) and HEAD of the one object, with the
/// headers object_store's HTTP store reads.
fn respond(request: &Request<Incoming>) -> Response<Full<Bytes>> {
    let head = match *request.method() {
        Method::GET => false,
        Method::HEAD => true,
        _ => return status_only(StatusCode::METHOD_NOT_ALLOWED),
    };
    if request.uri().path().strip_prefix('/') != Some(OBJECT_PATH) {
        return status_only(StatusCode::NOT_FOUND);
    }
    let (status, range) = match request.headers().get(header::RANGE) {
        None => (StatusCode::OK, 0..OBJECT_LEN),
        Some(value) => match parse_range(value) {
            Some(range) => (StatusCode::PARTIAL_CONTENT, range),
            None => {
                let mut response = status_only(StatusCode::RANGE_NOT_SATISFIABLE);
                let unsatisfied = HeaderValue::from_str(&format!("bytes */{OBJECT_LEN}")).unwrap();
                response
                    .headers_mut()
                    .insert(header::CONTENT_RANGE, unsatisfied);
                return response;
            }
        },
    };
    let mut response = Response::builder()
        .status(status)
        .header(header::CONTENT_LENGTH, range.len())
        .header(header::LAST_MODIFIED, LAST_MODIFIED)
        .header(header::ETAG, ETAG)
        .header(header::ACCEPT_RANGES, "bytes");
    if status == StatusCode::PARTIAL_CONTENT {
        let content_range = format!("bytes {}-{}/{OBJECT_LEN}", range.start, range.end - 1);
        response = response.header(header::CONTENT_RANGE, content_range);
    }
    let body = if head {
        Bytes::new()
    } else {
        Bytes::from_static(&object()[range])
    };
    response.body(Full::new(body)).unwrap()
}

fn status_only(status: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = status;
    response
}

/// One range of `bytes=first-last`, `bytes=first-` or `bytes=-suffix`, clamped to the
/// object; `None` if malformed or unsatisfiable.
fn parse_range(value: &HeaderValue) -> Option<Range<usize>> {
    let spec = value.to_str().ok()?.strip_prefix("bytes=")?;
    let (first, last) = spec.split_once('-')?;
    let (start, end) = match (first.trim(), last.trim()) {
        ("", suffix) => (OBJECT_LEN.saturating_sub(suffix.parse().ok()?), OBJECT_LEN),
        (first, "") => (first.parse().ok()?, OBJECT_LEN),
        (first, last) => {
            let last: usize = last.parse().ok()?;
            (first.parse().ok()?, last.saturating_add(1).min(OBJECT_LEN))
        }
    };
    (start < end).then_some(start..end)
}

// ---------------------------------------------------------------------------------------
// The shared clients, as synchronous range reads through `run_blocking`.

/// A synchronous range read through a shared client: what every context calls.
type Fetch = Arc<dyn Fn(Range<usize>) -> Bytes + Send + Sync>;

fn reqwest_client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// Range reads with a clone of one `reqwest::Client` (one connection pool).
fn reqwest_fetch(client: reqwest::Client, url: String) -> Fetch {
    Arc::new(move |range: Range<usize>| {
        let client = client.clone();
        let url = url.clone();
        let result = run_blocking(async move {
            let response = client
                .get(url)
                .header(
                    reqwest::header::RANGE,
                    format!("bytes={}-{}", range.start, range.end - 1),
                )
                .send()
                .await?;
            assert_eq!(response.status(), reqwest::StatusCode::PARTIAL_CONTENT);
            response.bytes().await
        });
        result.expect("range read with reqwest")
    })
}

fn http_store(server: &Server) -> Arc<object_store::http::HttpStore> {
    let store = object_store::http::HttpBuilder::new()
        .with_url(server.base_url())
        .with_client_options(ClientOptions::new().with_allow_http(true))
        .build()
        .unwrap();
    Arc::new(store)
}

/// Range reads with one object_store `HttpStore` (its reqwest pool inside).
fn object_store_fetch(store: Arc<object_store::http::HttpStore>) -> Fetch {
    Arc::new(move |range: Range<usize>| {
        let store = store.clone();
        let range = range.start as u64..range.end as u64;
        let result =
            run_blocking(async move { store.get_range(&Path::from(OBJECT_PATH), range).await });
        result.expect("range read with object_store")
    })
}

/// A deterministic range for call `seed`: 1 byte to 8 KiB, anywhere in the object.
fn range_for(seed: usize) -> Range<usize> {
    let start = seed.wrapping_mul(7_919) % (OBJECT_LEN - 1);
    let len = 1 + seed.wrapping_mul(104_729) % 8_192;
    start..(start + len).min(OBJECT_LEN)
}

/// The check every call makes: the route is the documented one, the bytes are right.
fn call(expected: Route, fetch: &Fetch, seed: usize) {
    assert_eq!(route(), expected, "route for call {seed}");
    let range = range_for(seed);
    let bytes = fetch(range.clone());
    assert_eq!(&bytes[..], &object()[range], "bytes of call {seed}");
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(not a string)".to_owned())
}

/// Threads (or tasks) per context; each rayon pool gets `THREADS * calls` items.
const THREADS: usize = 3;

/// Every context at once, `calls` calls per thread or task, all through `fetch`: plain
/// threads, a custom rayon pool, the global rayon pool, tasks and the body of a multi-thread
/// runtime, and two current-thread runtimes (body and a task each). Returns the number of
/// calls made. The multi-thread runtime is dropped once every context is done (not before:
/// see `dropping_a_multi_thread_runtime_fails_requests_in_flight_on_its_connections`), so
/// connections whose drivers it held are closed when this returns.
fn from_every_context(fetch: &Fetch, calls: usize, salt: usize) -> usize {
    let made = AtomicUsize::new(0);
    let made = &made;
    let counted = |expected: Route, seed: usize| {
        call(expected, fetch, salt + seed);
        made.fetch_add(1, Ordering::Relaxed);
    };
    let counted = &counted;
    let rt = multi_thread();
    let rt = &rt;
    std::thread::scope(|s| {
        for t in 0..THREADS {
            s.spawn(move || {
                for i in 0..calls {
                    counted(Route::Inline, 1_000 * t + i);
                }
            });
        }
        s.spawn(move || {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(THREADS)
                .build()
                .unwrap();
            pool.install(|| {
                (0..THREADS * calls)
                    .into_par_iter()
                    .for_each(|i| counted(Route::Inline, 10_000 + i));
            });
        });
        s.spawn(move || {
            (0..THREADS * calls)
                .into_par_iter()
                .for_each(|i| counted(Route::Inline, 20_000 + i));
        });
        s.spawn(move || {
            rt.block_on(async {
                let tasks: Vec<_> = (0..THREADS)
                    .map(|t| {
                        let fetch = fetch.clone();
                        tokio::spawn(async move {
                            for i in 0..calls {
                                call(Route::OnWorker, &fetch, salt + 30_000 + 1_000 * t + i);
                            }
                        })
                    })
                    .collect();
                for i in 0..calls {
                    counted(Route::Handoff, 34_000 + i);
                }
                for task in tasks {
                    task.await.unwrap();
                }
            });
            made.fetch_add(THREADS * calls, Ordering::Relaxed);
        });
        for t in 0..2 {
            s.spawn(move || {
                let rt = current_thread();
                rt.block_on(async {
                    let fetch_in_task = fetch.clone();
                    let task = tokio::spawn(async move {
                        for i in 0..calls {
                            call(
                                Route::Handoff,
                                &fetch_in_task,
                                salt + 40_000 + 1_000 * t + i,
                            );
                        }
                    });
                    for i in 0..calls {
                        counted(Route::Handoff, 45_000 + 1_000 * t + i);
                    }
                    task.await.unwrap();
                });
                made.fetch_add(calls, Ordering::Relaxed);
            });
        }
    });
    made.load(Ordering::Relaxed)
}

/// How many calls `from_every_context` makes with `calls` per thread or task.
fn every_context_calls(calls: usize) -> usize {
    // Plain threads, two rayon pools, multi-thread tasks and body, two current-thread
    // runtimes' bodies and tasks.
    (3 * THREADS + THREADS + 1 + 4) * calls
}

/// Calls per thread or task in the shared-client tests.
const CALLS: usize = 50;

/// Asserts that the pool reused connections: far fewer connections than requests.
fn assert_pooled(server: &Server, calls: usize, what: &str) {
    let (connections, requests) = (server.stats.connections(), server.stats.requests());
    eprintln!("{what}: {calls} calls, {requests} requests, {connections} connections");
    assert!(
        requests >= calls,
        "{what}: {requests} requests for {calls} calls"
    );
    assert!(connections >= 1);
    assert!(
        connections * 10 <= requests,
        "{what}: {connections} connections for {requests} requests: the pool was not reused"
    );
}

// ---------------------------------------------------------------------------------------
// The tests.

#[test]
fn one_reqwest_client_shared_by_every_context() {
    let server = Server::start();
    let fetch = reqwest_fetch(reqwest_client(), server.object_url());
    let calls = watchdog(120, move || {
        let first = from_every_context(&fetch, CALLS, 0);
        // Again with the same pool, after the multi-thread runtime that held some of the
        // connections' drivers was dropped.
        let second = from_every_context(&fetch, CALLS / 5, 100_000);
        first + second
    });
    assert_eq!(
        calls,
        every_context_calls(CALLS) + every_context_calls(CALLS / 5)
    );
    assert_pooled(&server, calls, "reqwest");
}

#[test]
fn one_object_store_client_shared_by_every_context() {
    let server = Server::start();
    let store = http_store(&server);
    let (calls, head) = watchdog(120, move || {
        let head = run_blocking({
            let store = store.clone();
            async move { store.head(&Path::from(OBJECT_PATH)).await }
        });
        let fetch = object_store_fetch(store);
        (from_every_context(&fetch, CALLS, 0), head)
    });
    let head = head.expect("HEAD with object_store");
    assert_eq!(head.size, OBJECT_LEN as u64);
    assert_eq!(head.e_tag.as_deref(), Some(ETAG));
    assert_pooled(&server, calls, "object_store");
}

/// The pool hands out its most recently used idle connection first, so the oldest ones are
/// reused only when more requests are in flight at once than newer connections are idle,
/// which depends on how the machine schedules the callers. If `first` connections served no
/// request yet, bursts of simultaneous calls (one per connection the pool holds, and more)
/// check out every idle connection until one of them serves; returns how many did.
fn bursts_until_reused(fetch: &Fetch, stats: &Stats, first: usize, salt: usize) -> usize {
    let before = stats.served_on_first(first);
    for round in 0..20 {
        if stats.served_on_first(first) > before {
            break;
        }
        let callers = stats.connections() + 2;
        let start = Barrier::new(callers);
        std::thread::scope(|s| {
            for i in 0..callers {
                let start = &start;
                s.spawn(move || {
                    start.wait();
                    call(Route::Inline, fetch, salt + 1_000 * round + i);
                });
            }
        });
    }
    stats.served_on_first(first) - before
}

/// The stranding scenario. Connections are first made by calls from current-thread
/// runtimes and plain threads; those threads then go idle (the runtimes alive but not
/// driven, the threads parked) while rayon workers, multi-thread tasks and other threads
/// reuse the pool, and then they exit (runtimes dropped) and the pool is reused again.
///
/// With the current design the drivers of those first connections live on
/// `IoRuntime::global()` (see the module docs): the calls from the current-thread runtimes
/// were handed to its tasks, the plain threads' calls spawned into it from inside its
/// `Handle::block_on`. Its workers always run, so the idle or gone callers strand nothing.
/// A runtime per call would have killed the drivers when the call returned; a runtime
/// cached per thread would hold them undriven while its thread is idle, and the reuse below
/// would hang (the watchdog fails the test).
#[test]
fn connections_made_by_threads_that_go_idle_or_exit_stay_usable() {
    let server = Server::start();
    let stats = server.stats.clone();
    let fetch = reqwest_fetch(reqwest_client(), server.object_url());
    watchdog(120, move || {
        const FIRST: usize = 4;
        let start = Arc::new(Barrier::new(FIRST));
        let (done_tx, done_rx) = mpsc::channel();
        let mut releases = Vec::new();
        let mut first_callers = Vec::new();
        for t in 0..FIRST {
            let (release_tx, release_rx) = mpsc::channel::<()>();
            releases.push(release_tx);
            let (fetch, start, done_tx) = (fetch.clone(), start.clone(), done_tx.clone());
            first_callers.push(std::thread::spawn(move || {
                let on_runtime = t % 2 == 0;
                let runtime = on_runtime.then(current_thread);
                let calls = || {
                    start.wait();
                    for i in 0..5 {
                        let expected = if on_runtime {
                            Route::Handoff
                        } else {
                            Route::Inline
                        };
                        call(expected, &fetch, 1_000 * t + i);
                    }
                };
                match &runtime {
                    Some(rt) => rt.block_on(async { calls() }),
                    None => calls(),
                }
                done_tx.send(()).unwrap();
                // Idle: the runtime (if any) is alive but nobody drives it.
                let _ = release_rx.recv();
                drop(runtime);
            }));
        }
        for _ in 0..FIRST {
            done_rx.recv().unwrap();
        }
        let made_first = stats.connections();
        let served_first = stats.served_on_first(made_first);
        assert!(made_first >= 1);

        // The first callers are idle: reuse their connections from everywhere else.
        let calls = from_every_context(&fetch, 10, 200_000);
        let reused = stats.served_on_first(made_first) - served_first
            + bursts_until_reused(&fetch, &stats, made_first, 400_000);
        eprintln!(
            "stranding: {made_first} connections made by idle callers, {reused} of {calls} \
             later requests served on them"
        );
        assert!(
            reused > 0,
            "no request reused a connection made by the idle callers"
        );

        // The first callers exit, their current-thread runtimes dropped: reuse again.
        drop(releases);
        for caller in first_callers {
            caller.join().unwrap();
        }
        let served_before = stats.served_on_first(made_first);
        let calls = from_every_context(&fetch, 10, 300_000);
        let reused = stats.served_on_first(made_first) - served_before
            + bursts_until_reused(&fetch, &stats, made_first, 500_000);
        eprintln!(
            "stranding: after the idle callers exited, {reused} of {calls} requests served on \
             their connections"
        );
        assert!(
            reused > 0,
            "no request reused a connection made by the exited callers"
        );
    });
    eprintln!(
        "stranding: {} requests on {} connections",
        server.stats.requests(),
        server.stats.connections()
    );
}

/// The control for the test above: a connection whose driver was spawned by a call made
/// directly on a current-thread runtime (not through the bridge) lives on that runtime; once
/// the runtime is idle, a call from another thread that reuses the pooled connection hangs.
/// This is the hazard the bridge must never create, and it shows the setup detects it.
#[test]
fn a_connection_whose_driver_sits_on_an_idle_runtime_hangs() {
    let server = Server::start();
    let client = reqwest_client();
    let url = server.object_url();
    let outcome = watchdog(60, move || {
        let rt = current_thread();
        rt.block_on(async {
            let response = client.get(&url).send().await.unwrap();
            assert_eq!(response.bytes().await.unwrap().len(), OBJECT_LEN);
            // Let the driver hand the idle connection back to the pool.
            tokio::time::sleep(Duration::from_millis(50)).await;
        });
        // `rt` is alive and idle. Reuse the pooled connection from this (plain) thread.
        let outcome = bridge_tokio::try_run_blocking_timeout(
            async move { client.get(&url).send().await.map(|r| r.status()) },
            Duration::from_millis(500),
        );
        drop(rt);
        outcome
    });
    assert!(
        outcome.as_ref().is_err_and(|e| e.is_timeout()),
        "expected the reuse to hang: {outcome:?}"
    );
    assert_eq!(server.stats.connections(), 1);
}

thread_local! {
    /// A value whose destructor calls `run_blocking`, run when its thread exits.
    static CALL_ON_EXIT: RefCell<Option<CallOnExit>> = const { RefCell::new(None) };
}

/// Calls `run_blocking` (a range read with the shared client) when dropped and reports the
/// outcome, a panic caught and reported as its message.
struct CallOnExit {
    fetch: Fetch,
    report: mpsc::Sender<Result<(), String>>,
}

impl Drop for CallOnExit {
    fn drop(&mut self) {
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            let range = range_for(77);
            assert_eq!(&(self.fetch)(range.clone())[..], &object()[range]);
        }));
        let _ = self.report.send(outcome.map_err(|p| panic_message(&*p)));
    }
}

fn call_on_exit(fetch: &Fetch, report: &mpsc::Sender<Result<(), String>>) {
    let guard = CallOnExit {
        fetch: fetch.clone(),
        report: report.clone(),
    };
    CALL_ON_EXIT.with(|slot| *slot.borrow_mut() = Some(guard));
}

/// Thread exit never panics: a rayon pool whose workers called `run_blocking` is dropped
/// and its threads joined (its exit handler calls `run_blocking` too), and plain threads
/// that called it exit, with a thread-local destructor that calls it as well.
#[test]
fn thread_exit_after_calls_never_panics() {
    let server = Server::start();
    let fetch = reqwest_fetch(reqwest_client(), server.object_url());
    watchdog(60, move || {
        let panics = Arc::new(AtomicUsize::new(0));
        let exits = Arc::new(AtomicUsize::new(0));
        let (report_tx, report_rx) = mpsc::channel();
        let mut workers = Vec::new();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(THREADS)
            .spawn_handler(|thread| {
                let worker = std::thread::Builder::new()
                    .name(format!("exiting-rayon-{}", thread.index()))
                    .spawn(|| thread.run())?;
                workers.push(worker);
                Ok(())
            })
            .panic_handler({
                let panics = panics.clone();
                move |_| {
                    panics.fetch_add(1, Ordering::SeqCst);
                }
            })
            .exit_handler({
                let (fetch, panics, exits) = (fetch.clone(), panics.clone(), exits.clone());
                move |index| {
                    let exit = panic::catch_unwind(AssertUnwindSafe(|| {
                        call(Route::Inline, &fetch, 50_000 + index);
                    }));
                    let counter = if exit.is_ok() { &exits } else { &panics };
                    counter.fetch_add(1, Ordering::SeqCst);
                }
            })
            .build()
            .unwrap();
        pool.broadcast(|ctx| {
            for i in 0..10 {
                call(Route::Inline, &fetch, 51_000 + 100 * ctx.index() + i);
            }
            // A thread-local destructor that calls the bridge when the worker exits, after
            // the bridge's and tokio's own thread-locals were set up by the calls above.
            call_on_exit(&fetch, &report_tx);
        });
        pool.spawn({
            let fetch = fetch.clone();
            move || call(Route::Inline, &fetch, 52_000)
        });
        drop(pool);
        assert_eq!(workers.len(), THREADS);
        for worker in workers {
            worker.join().expect("a rayon worker panicked on exit");
        }
        assert_eq!(panics.load(Ordering::SeqCst), 0, "panics in the rayon pool");
        assert_eq!(exits.load(Ordering::SeqCst), THREADS);
        for _ in 0..THREADS {
            let outcome = report_rx.recv_timeout(Duration::from_secs(30)).unwrap();
            outcome.expect("run_blocking in a rayon worker's thread-local destructor");
        }

        // A plain thread: calls, then exit, with a thread-local destructor set up after the
        // calls (so it runs before tokio's and the bridge's own thread-locals are gone).
        exit_with_a_call_in_a_thread_local_destructor(&fetch, false);
    });
    eprintln!(
        "thread exit: {} requests on {} connections",
        server.stats.requests(),
        server.stats.connections()
    );
}

/// A plain thread that calls `run_blocking`, then exits while `CALL_ON_EXIT` holds a value
/// whose destructor calls it again; `set_up_first` puts that value in place before the
/// thread's calls, so that its destructor runs after those of the thread-locals that the calls
/// initialized (tokio's context, the bridge's own): thread-local destructors run in the
/// reverse order of their registration.
fn exit_with_a_call_in_a_thread_local_destructor(fetch: &Fetch, set_up_first: bool) {
    let (report_tx, report_rx) = mpsc::channel();
    let fetch = fetch.clone();
    std::thread::spawn(move || {
        if set_up_first {
            call_on_exit(&fetch, &report_tx);
        }
        for i in 0..10 {
            call(Route::Inline, &fetch, 53_000 + i);
        }
        if !set_up_first {
            call_on_exit(&fetch, &report_tx);
        }
    })
    .join()
    .expect("a plain thread panicked on exit");
    let outcome = report_rx.recv_timeout(Duration::from_secs(30)).unwrap();
    if let Err(message) = outcome {
        let when = if set_up_first { "before" } else { "after" };
        panic!(
            "run_blocking in a thread-local destructor (set up {when} the thread's calls) \
             panicked: {message}"
        );
    }
}

/// `run_blocking` from a thread-local destructor that runs after tokio's own thread-local
/// context was destroyed: no runtime can be entered there (`Handle::block_on` would panic
/// reading tokio's destroyed `CONTEXT`), so the bridge sees `is_thread_local_destroyed()` and
/// hands the future to the shared I/O runtime as a task.
#[test]
fn run_blocking_in_a_thread_local_destructor_after_tokio_s_context_is_gone() {
    let server = Server::start();
    let fetch = reqwest_fetch(reqwest_client(), server.object_url());
    watchdog(60, move || {
        exit_with_a_call_in_a_thread_local_destructor(&fetch, true)
    });
}

/// A shared client used from a multi-thread runtime's task makes connections whose drivers
/// live on the runtime that drives the call. Through plain `run_blocking` (the
/// `OnWorker` route drives the future with the ambient handle) that is the caller's
/// runtime, and a request in flight on such a pooled connection fails if that runtime is
/// dropped meanwhile (hyper's `DispatchGone`): the driver goes with its runtime. That is the
/// documented trade of driving a future where it runs; the remedy for clients shared beyond
/// one runtime's life is `spawn_io(future).wait()` (`IoRuntime::spawn`), which always drives
/// the future (and so spawns the drivers) on the I/O runtime. This test pins the remedy: the same race, with
/// the first call made through the I/O runtime, leaves the request in flight unharmed.
#[test]
fn a_client_driven_through_the_io_runtime_outlives_the_callers_runtime() {
    let server = Server::start();
    let stats = server.stats.clone();
    let client = reqwest_client();
    let first_client = client.clone();
    let url = server.object_url();
    let slow_url = format!("{}?delay_ms=300", server.object_url());
    let outcome = watchdog(60, move || {
        let rt = multi_thread();
        rt.block_on(async {
            tokio::spawn(async move {
                assert_eq!(route(), Route::OnWorker);
                let len = bridge_tokio::IoRuntime::global()
                    .spawn(async move {
                        let response = first_client.get(url).send().await?;
                        response.bytes().await.map(|body| body.len())
                    })
                    .wait();
                assert_eq!(len.expect("the first request"), OBJECT_LEN);
            })
            .await
            .unwrap();
            // Let the connection go back to the pool.
            tokio::time::sleep(Duration::from_millis(50)).await;
        });
        assert_eq!(stats.connections(), 1);
        // A plain thread reuses that connection for a slow request; the caller's runtime is
        // dropped meanwhile, but the connection's driver lives on the I/O runtime.
        let slow = std::thread::spawn(move || {
            bridge_tokio::try_run_blocking(async move {
                let response = client.get(slow_url).send().await?;
                response.bytes().await.map(|body| body.len())
            })
        });
        std::thread::sleep(Duration::from_millis(100));
        drop(rt);
        let outcome = slow.join().unwrap();
        assert_eq!(
            stats.served_on_first(1),
            2,
            "the slow request reused the connection"
        );
        outcome
    });
    match outcome {
        Ok(Ok(len)) => assert_eq!(len, OBJECT_LEN),
        other => {
            panic!("the request in flight failed when the caller's runtime was dropped: {other:?}")
        }
    }
}
