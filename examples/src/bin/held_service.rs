//! A service whose handler does its CPU work inline, and the watch that names it.
//!
//! The service (hyper on a 2-worker tokio runtime, on a loopback port) answers `GET /hash`
//! after about 5 ms of hashing done right in the handler, on the tokio worker, and `GET /ping`
//! at once. The runtime is under `bridge::rt::watch`, and each request's handler future is
//! wrapped in `bridge::rt::watched`, so the warnings say both how long work woken on the
//! runtime waited and which handler held its workers (the file and line of the `watched`
//! call). A client keeps 32 `/hash` requests in flight for 2.5 s while a second one times
//! `/ping`. The slow-poll threshold is set to 2 ms, so that the 5 ms of hashing is named on
//! any machine.
//!
//! The program prints the `/ping` latencies, the counts and the first warnings, and exits
//! non-zero unless a warning named the `/hash` handler's line.
//!
//! ```sh
//! cargo run --release --manifest-path bridge-bench/Cargo.toml -p bridge-examples --bin held_service
//! ```

use anyhow::{bail, ensure};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};
use std::convert::Infallible;
use std::future::Future;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

/// Requests to `/hash` in flight at once.
const IN_FLIGHT: usize = 32;
/// How long the load runs.
const LOAD: Duration = Duration::from_millis(2500);
/// The CPU work of one `/hash`.
const HASHING: Duration = Duration::from_millis(5);

type Reply = Pin<Box<dyn Future<Output = Result<Response<Full<Bytes>>, Infallible>> + Send>>;

/// About [`HASHING`] of CPU work, inline: the mistake the watch names.
async fn hash<B>(_request: Request<B>) -> Result<Response<Full<Bytes>>, Infallible> {
    let start = Instant::now();
    let mut hasher = DefaultHasher::new();
    let block = [7u8; 4096];
    while start.elapsed() < HASHING {
        block.hash(&mut hasher);
    }
    Ok(Response::new(Full::new(Bytes::from(
        hasher.finish().to_string(),
    ))))
}

/// The `/hash` handler, watched; and the line of the `watched` call, which the warning names.
fn hash_route<B: Send + 'static>(request: Request<B>) -> (u32, Reply) {
    (line!(), Box::pin(bridge::rt::watched(hash(request))))
}

fn route(request: Request<Incoming>) -> Reply {
    if request.uri().path() == "/hash" {
        return hash_route(request).1;
    }
    Box::pin(async { Ok(Response::new(Full::new(Bytes::from_static(b"pong")))) })
}

/// The log: every line the `tracing` subscriber writes, kept for the checks.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn main() -> anyhow::Result<()> {
    let log = Log::default();
    let writer = log.clone();
    tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .with_writer(move || writer.clone())
        .init();

    // A service whose latency budget is tighter than the default 10 ms: a poll over 2 ms is
    // named (the 5 ms of hashing always is, on any machine).
    bridge::configure()
        .slow_poll(Duration::from_millis(2))
        .apply();
    let service = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let watch = bridge::rt::watch(service.handle());
    let listener = service.block_on(TcpListener::bind("127.0.0.1:0"))?;
    let addr = listener.local_addr()?;
    service.spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(stream);
                let service = hyper::service::service_fn(route);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });

    // The clients, on a runtime of their own.
    let clients = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let pings = clients.block_on(async move {
        let client = reqwest::Client::new();
        let end = Instant::now() + LOAD;
        let mut load = tokio::task::JoinSet::new();
        for _ in 0..IN_FLIGHT {
            let (client, url) = (client.clone(), format!("http://{addr}/hash"));
            load.spawn(async move {
                while Instant::now() < end {
                    client.get(&url).send().await?.bytes().await?;
                }
                Ok::<_, reqwest::Error>(())
            });
        }
        let mut pings = Vec::new();
        let url = format!("http://{addr}/ping");
        while Instant::now() < end {
            let start = Instant::now();
            client.get(&url).send().await?.bytes().await?;
            pings.push(start.elapsed());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        while let Some(done) = load.join_next().await {
            done.expect("a load task")?;
        }
        Ok::<_, reqwest::Error>(pings)
    })?;
    drop(watch);
    drop(service);

    let mut pings = pings;
    pings.sort();
    ensure!(!pings.is_empty(), "no ping was answered");
    let at = |q: f64| pings[((pings.len() - 1) as f64 * q) as usize];
    println!(
        "/ping while /hash holds the workers: p50 {:?}, p99 {:?} ({} pings)",
        at(0.5),
        at(0.99),
        pings.len()
    );
    let metrics = bridge::metrics().io;
    println!(
        "io.held_runtimes {}, io.slow_polls {}",
        metrics.held_runtimes, metrics.slow_polls
    );

    let text = String::from_utf8_lossy(&log.0.lock().unwrap()).into_owned();
    let warnings: Vec<&str> = text.lines().filter(|l| l.contains("WARN")).collect();
    for line in warnings
        .iter()
        .filter(|w| w.contains("rt::watch:"))
        .chain(warnings.iter().take(2))
    {
        println!("{line}");
    }
    println!("({} warnings in all)", warnings.len());
    let (line, _) = hash_route(Request::new(()));
    let site = format!("held_service.rs:{line}");
    if !warnings.iter().any(|w| w.contains(&site)) {
        bail!("no warning named the /hash handler ({site})");
    }
    println!("the /hash handler was named: {site}");
    Ok(())
}
