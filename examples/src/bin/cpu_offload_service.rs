//! An async HTTP service whose handler hands its CPU work to rayon with `bridge::spawn`.
//!
//! The service (hyper on a tokio runtime, on a loopback port) takes JSON documents of orders
//! on `POST /digest`, and answers with a digest of each: how many orders and items, the
//! total, and a hash of the parsed orders. Reading the body is I/O and stays on the tokio
//! workers; parsing over a megabyte of JSON and hashing it is CPU work, so it runs on rayon, and
//! the tokio workers stay free to accept connections and answer `GET /healthz` meanwhile.
//!
//! Every request gets a tracing span, and the CPU closure logs inside that span although it
//! runs on a rayon thread: it enters the span it was handed.
//!
//! The program starts the service, sends 50 requests at once (two of them malformed) while a
//! probe polls `/healthz`, checks every answer against the digest it computed when it made
//! the documents, prints latency percentiles and shuts the service down. It exits non-zero
//! on any wrong answer.
//!
//! ```sh
//! cargo run --manifest-path bridge-bench/Cargo.toml -p bridge-examples --bin cpu_offload_service
//! RUST_LOG=debug cargo run --manifest-path bridge-bench/Cargo.toml -p bridge-examples --bin cpu_offload_service  # more lines
//! ```

use anyhow::{Context as _, bail, ensure};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinSet;
use tracing::{Instrument, Span, debug, info, info_span, warn};

/// Requests sent at once.
const REQUESTS: usize = 50;
/// Distinct documents; request `i` sends document `i % DOCUMENTS`.
const DOCUMENTS: usize = 5;
/// Orders per document: about 1.3 MB of JSON each.
const ORDERS_PER_DOCUMENT: u64 = 6_000;
/// Requests that send a truncated document and must get a 400.
const MALFORMED: [usize; 2] = [13, 37];
/// The largest body the service reads.
const MAX_BODY: usize = 16 << 20;

// ---------------------------------------------------------------------------------------
// What the service parses and what it answers.

#[derive(Serialize, Deserialize, Hash)]
struct Order {
    id: u64,
    customer: String,
    items: Vec<Item>,
    note: Option<String>,
}

#[derive(Serialize, Deserialize, Hash)]
struct Item {
    sku: String,
    quantity: u32,
    price_cents: u64,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
struct Digest {
    orders: usize,
    items: usize,
    total_cents: u64,
    /// A hash of the parsed orders, in hex. (`DefaultHasher::new()` hashes the same way
    /// within one build, which is all this program needs: both sides run in it.)
    hash: String,
}

impl Digest {
    fn of(orders: &[Order]) -> Self {
        let mut hasher = DefaultHasher::new();
        orders.hash(&mut hasher);
        Self {
            orders: orders.len(),
            items: orders.iter().map(|order| order.items.len()).sum(),
            total_cents: orders
                .iter()
                .flat_map(|order| &order.items)
                .map(|item| u64::from(item.quantity) * item.price_cents)
                .sum(),
            hash: format!("{:016x}", hasher.finish()),
        }
    }
}

/// The CPU work of one request: parse the document and digest it. Runs on a rayon thread.
fn parse_and_digest(body: &[u8]) -> Result<Digest, serde_json::Error> {
    let started = Instant::now();
    let orders: Vec<Order> = serde_json::from_slice(body)?;
    let digest = Digest::of(&orders);
    info!(
        bytes = body.len(),
        orders = digest.orders,
        took_ms = started.elapsed().as_millis() as u64,
        "parsed and hashed"
    );
    Ok(digest)
}

// ---------------------------------------------------------------------------------------
// The service.

async fn handle(request: Request<Incoming>) -> Response<Full<Bytes>> {
    match (request.method(), request.uri().path()) {
        (&Method::GET, "/healthz") => text(StatusCode::OK, "ok"),
        (&Method::POST, "/digest") => digest(request).await,
        _ => text(StatusCode::NOT_FOUND, "no such route"),
    }
}

async fn digest(request: Request<Incoming>) -> Response<Full<Bytes>> {
    // I/O: read the body here, on the tokio worker.
    let body = match Limited::new(request.into_body(), MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) => return text(StatusCode::BAD_REQUEST, &format!("reading body: {error}")),
    };
    // CPU: parse and hash on rayon. The span is handed over so that the closure's log line
    // belongs to this request; `catch_unwind` turns a panic in the closure into an error
    // here instead of a panic in the connection task.
    let span = Span::current();
    let outcome = bridge::spawn(move || span.in_scope(|| parse_and_digest(&body)))
        .catch_unwind()
        .await;
    match outcome {
        Ok(Ok(digest)) => {
            debug!(hash = %digest.hash, "answered");
            let json = serde_json::to_vec(&digest).expect("a digest serializes");
            Response::new(Full::new(Bytes::from(json)))
        }
        Ok(Err(error)) => {
            warn!(%error, "malformed document");
            text(
                StatusCode::BAD_REQUEST,
                &format!("malformed document: {error}"),
            )
        }
        Err(error) => {
            warn!(%error, "the digest failed");
            text(StatusCode::INTERNAL_SERVER_ERROR, "the digest failed")
        }
    }
}

fn text(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_owned())));
    *response.status_mut() = status;
    response
}

/// One connection: HTTP/1.1 with keep-alive, a span per request.
async fn serve_connection(stream: TcpStream) {
    let service = hyper::service::service_fn(|request: Request<Incoming>| {
        let id = request
            .headers()
            .get("x-request-id")
            .and_then(|value| value.to_str().ok())
            .unwrap_or("-")
            .to_owned();
        let span =
            info_span!("request", %id, method = %request.method(), path = request.uri().path());
        async move { Ok::<_, std::convert::Infallible>(handle(request).await) }.instrument(span)
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
    if let Err(error) = connection.await {
        debug!(%error, "connection ended with an error");
    }
}

/// Accepts connections until `shutdown` fires, then waits for the open ones to end (they
/// end when their clients close them). Returns how many connections it served.
async fn serve(listener: TcpListener, mut shutdown: oneshot::Receiver<()>) -> usize {
    let mut connections = JoinSet::new();
    let mut accepted = 0;
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            incoming = listener.accept() => match incoming {
                Ok((stream, _)) => {
                    accepted += 1;
                    connections.spawn(serve_connection(stream));
                }
                Err(error) => warn!(%error, "accept failed"),
            },
        }
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
    accepted
}

// ---------------------------------------------------------------------------------------
// The client side: documents, the load, the health probe, the checks.

struct Document {
    body: Bytes,
    expected: Digest,
}

/// A deterministic document of orders, with the digest the service must answer for it.
fn make_document(seed: u64) -> Document {
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let orders: Vec<Order> = (0..ORDERS_PER_DOCUMENT)
        .map(|n| Order {
            id: seed * 1_000_000 + n,
            customer: format!("customer-{:05}", next() % 50_000),
            items: (0..1 + next() % 4)
                .map(|_| Item {
                    sku: format!("SKU-{:08X}", next() % 0xFFFF_FFFF),
                    quantity: 1 + (next() % 9) as u32,
                    price_cents: 99 + next() % 99_900,
                })
                .collect(),
            note: (next() % 3 == 0).then(|| "leave at the door, ring twice".to_owned()),
        })
        .collect();
    let body = serde_json::to_vec(&orders).expect("orders serialize");
    Document {
        body: Bytes::from(body),
        expected: Digest::of(&orders),
    }
}

/// Nearest-rank percentile of sorted durations.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn summary(sorted: &[Duration]) -> String {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    format!(
        "p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        ms(percentile(sorted, 50.0)),
        ms(percentile(sorted, 90.0)),
        ms(percentile(sorted, 99.0)),
        ms(sorted[sorted.len() - 1]),
    )
}

/// Sends request `i` and checks the answer; returns its latency.
async fn send_one(
    client: reqwest::Client,
    url: String,
    i: usize,
    document: Bytes,
    expected: Option<Digest>,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let response = client
        .post(&url)
        .header("x-request-id", i.to_string())
        .body(document)
        .send()
        .await?;
    let status = response.status();
    let body = response.bytes().await?;
    let latency = started.elapsed();
    match expected {
        Some(expected) => {
            ensure!(
                status == StatusCode::OK,
                "request {i}: status {status}: {}",
                String::from_utf8_lossy(&body)
            );
            let digest: Digest = serde_json::from_slice(&body)
                .with_context(|| format!("request {i}: the answer is not a digest"))?;
            ensure!(
                digest == expected,
                "request {i}: got {digest:?}, expected {expected:?}"
            );
        }
        None => ensure!(
            status == StatusCode::BAD_REQUEST,
            "request {i}: a malformed document got status {status}"
        ),
    }
    Ok(latency)
}

/// Polls `/healthz` until `done`; returns each poll's latency.
async fn probe(
    client: reqwest::Client,
    url: String,
    done: Arc<AtomicBool>,
) -> anyhow::Result<Vec<Duration>> {
    let mut latencies = Vec::new();
    while !done.load(Ordering::Relaxed) {
        let started = Instant::now();
        let response = client.get(&url).send().await?;
        ensure!(
            response.status() == StatusCode::OK,
            "healthz: {}",
            response.status()
        );
        response.bytes().await?;
        latencies.push(started.elapsed());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(latencies)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_thread_names(true)
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .init();
    // Named rayon threads, so that the log lines show where the CPU work ran.
    rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("cpu-{i}"))
        .build_global()?;

    // Making the documents is CPU work too: rayon, awaited.
    let documents: Vec<Document> = bridge::spawn(|| {
        (0..DOCUMENTS as u64)
            .into_par_iter()
            .map(make_document)
            .collect()
    })
    .await;
    let megabytes = documents.iter().map(|d| d.body.len()).sum::<usize>() as f64 / 1e6;
    info!("made {DOCUMENTS} documents, {megabytes:.1} MB of JSON");

    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = oneshot::channel();
    let server = tokio::spawn(serve(listener, stopped));
    info!("serving on http://{addr}");

    let client = reqwest::Client::builder().no_proxy().build()?;
    let done = Arc::new(AtomicBool::new(false));
    let health = tokio::spawn(probe(
        client.clone(),
        format!("http://{addr}/healthz"),
        done.clone(),
    ));

    let started = Instant::now();
    let mut requests = JoinSet::new();
    for i in 0..REQUESTS {
        let document = &documents[i % DOCUMENTS];
        let (body, expected) = if MALFORMED.contains(&i) {
            (document.body.slice(..document.body.len() / 2), None)
        } else {
            (document.body.clone(), Some(document.expected.clone()))
        };
        let url = format!("http://{addr}/digest");
        requests.spawn(send_one(client.clone(), url, i, body, expected));
    }
    let mut latencies = Vec::with_capacity(REQUESTS);
    let mut failures = Vec::new();
    while let Some(joined) = requests.join_next().await {
        match joined? {
            Ok(latency) => latencies.push(latency),
            Err(error) => failures.push(error),
        }
    }
    let elapsed = started.elapsed();
    done.store(true, Ordering::Relaxed);
    let mut health = health.await??;

    // Shut down: the clients go first (closing their pooled connections), then the server
    // stops accepting and waits for its connections to end.
    drop(client);
    let _ = stop.send(());
    let connections = tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .context("the server did not shut down within 10 s")??;

    for failure in &failures {
        eprintln!("wrong answer: {failure:#}");
    }
    if !failures.is_empty() {
        bail!(
            "{} of {REQUESTS} requests got a wrong answer",
            failures.len()
        );
    }
    ensure!(!health.is_empty(), "the health probe never ran");
    latencies.sort();
    health.sort();
    println!(
        "cpu_offload_service: {REQUESTS} requests ({} malformed, all answered 400), {megabytes:.1} MB \
         of distinct JSON, every digest checked, {connections} connections, {:.2} s",
        MALFORMED.len(),
        elapsed.as_secs_f64()
    );
    println!("  /digest latency:  {}", summary(&latencies));
    println!(
        "  /healthz latency: {} ({} probes during the load)",
        summary(&health),
        health.len()
    );
    Ok(())
}
