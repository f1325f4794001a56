//! A synchronous command-line program that downloads files over HTTP: no `#[tokio::main]`,
//! no `async fn` of its own, and one pooled `reqwest::Client` shared by every download.
//!
//! The downloads run in a rayon `par_iter`; each one is a synchronous call,
//! `bridge::try_run_blocking(async { client.get(url).send().await?... })`, whose future
//! borrows the shared client and the URL: nothing is cloned per call. On a rayon worker the
//! future is polled right there, and the bridge's shared I/O runtime drives the sockets, so
//! the client's pooled connections stay usable from every thread. Errors come back with `?`
//! as `anyhow::Error`.
//!
//! The program starts a loopback HTTP server that stands in for a remote one (on a small
//! runtime of its own, as another process would be), fetches its manifest, downloads every
//! file it lists, checks each body's length and hash against the manifest, checks that a
//! missing file is reported as a 404, prints the totals and exits; non-zero on any wrong
//! body.
//!
//! ```sh
//! cargo run --manifest-path bridge-bench/Cargo.toml -p bridge-examples --bin sync_cli_fetch
//! ```

use anyhow::{Context as _, bail, ensure};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::convert::Infallible;
use std::hash::{DefaultHasher, Hasher};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Files the server offers.
const FILES: usize = 200;
/// Threads downloading at once (a rayon pool of this program's own: the downloads wait on
/// the network, so more threads than cores pay off).
const DOWNLOADERS: usize = 8;

/// One line of the manifest: where a file is, and what its bytes must be.
#[derive(Serialize, Deserialize, Debug)]
struct Entry {
    path: String,
    len: usize,
    hash: u64,
}

fn hash(bytes: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    hasher.write(bytes);
    hasher.finish()
}

// ---------------------------------------------------------------------------------------
// The command-line program: synchronous code from top to bottom.

/// Downloads `url` with the shared client. The future borrows `client` and `url`; the call
/// returns only once the future is done, so the borrows end before this function does.
fn fetch(client: &reqwest::Client, url: &str) -> anyhow::Result<Bytes> {
    // `??`: the outer error is the bridge's (`bridge::Error`: the future panicked, or its
    // runtime went away), the inner one reqwest's (connection, status, body). Both go into
    // anyhow as they are, so a caller can still downcast them.
    let body = bridge::try_run_blocking(async {
        client
            .get(url)
            .send()
            .await?
            .error_for_status()?
            .bytes()
            .await
    })??;
    Ok(body)
}

fn main() -> anyhow::Result<()> {
    let server = Server::start()?;
    let base = format!("http://{}", server.addr);
    let client = reqwest::Client::builder().no_proxy().build()?;

    let manifest: Vec<Entry> =
        serde_json::from_slice(&fetch(&client, &format!("{base}/manifest"))?)
            .context("the manifest is not valid JSON")?;
    ensure!(
        manifest.len() == FILES,
        "the manifest lists {} files",
        manifest.len()
    );

    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(DOWNLOADERS)
        .thread_name(|i| format!("download-{i}"))
        .build()?;
    let started = Instant::now();
    let outcomes: Vec<anyhow::Result<usize>> = pool.install(|| {
        manifest
            .par_iter()
            .map(|entry| {
                let url = format!("{base}/{}", entry.path);
                let body = fetch(&client, &url).with_context(|| format!("GET {url}"))?;
                ensure!(
                    body.len() == entry.len && hash(&body) == entry.hash,
                    "GET {url}: {} bytes that do not match the manifest",
                    body.len()
                );
                Ok(body.len())
            })
            .collect()
    });
    let elapsed = started.elapsed();

    let mut bytes = 0;
    let mut failures = 0;
    for outcome in outcomes {
        match outcome {
            Ok(len) => bytes += len,
            Err(error) => {
                failures += 1;
                eprintln!("error: {error:#}");
            }
        }
    }
    if failures > 0 {
        bail!("{failures} of {FILES} downloads failed");
    }

    // A file that is not there: the 404 comes back as reqwest's error inside anyhow's.
    let missing = format!("{base}/files/no-such-file");
    match fetch(&client, &missing) {
        Ok(body) => bail!("GET {missing}: expected a 404, got {} bytes", body.len()),
        Err(error) => {
            let status = error
                .downcast_ref::<reqwest::Error>()
                .and_then(reqwest::Error::status);
            ensure!(
                status == Some(reqwest::StatusCode::NOT_FOUND),
                "GET {missing}: expected a 404, got: {error:#}"
            );
        }
    }

    // One pooled client: the downloads share a handful of keep-alive connections (about one
    // per thread; a connection that is not back in the pool yet when the next call starts
    // makes a new one), not one per request.
    let (requests, connections) = (
        server.requests.load(Ordering::SeqCst),
        server.connections.load(Ordering::SeqCst),
    );
    ensure!(
        connections <= FILES / 4,
        "{requests} requests took {connections} connections: the client did not pool them"
    );

    println!(
        "sync_cli_fetch: {FILES} files, {:.1} MB, every body checked against the manifest, in \
         {:.2} s on {DOWNLOADERS} rayon threads; {requests} requests on {connections} pooled \
         connections; the \
         missing file reported as 404",
        bytes as f64 / 1e6,
        elapsed.as_secs_f64(),
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The stand-in for a remote server: HTTP/1.1 with keep-alive on a loopback port, on a
// runtime of its own. It serves `/manifest` and `/files/<n>` (1 KiB to 64 KiB each).

struct Server {
    addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    requests: Arc<AtomicUsize>,
    /// Kept alive for as long as the server serves; dropped at the end of `main`.
    _runtime: tokio::runtime::Runtime,
}

fn file(n: usize) -> Vec<u8> {
    let len = 1024 + n * 7_919 % (63 * 1024);
    (0..len).map(|i| (i * 31 + n * 17) as u8).collect()
}

fn manifest() -> Vec<u8> {
    let entries: Vec<Entry> = (0..FILES)
        .map(|n| {
            let body = file(n);
            Entry {
                path: format!("files/{n}"),
                len: body.len(),
                hash: hash(&body),
            }
        })
        .collect();
    serde_json::to_vec(&entries).expect("the manifest serializes")
}

fn respond(request: &Request<Incoming>) -> Response<Full<Bytes>> {
    let path = request.uri().path();
    let body = if path == "/manifest" {
        Some(manifest())
    } else {
        path.strip_prefix("/files/")
            .and_then(|n| n.parse().ok())
            .filter(|&n: &usize| n < FILES)
            .map(file)
    };
    match body {
        Some(body) => Response::new(Full::new(Bytes::from(body))),
        None => {
            let mut response = Response::new(Full::new(Bytes::from_static(b"not found")));
            *response.status_mut() = StatusCode::NOT_FOUND;
            response
        }
    }
}

impl Server {
    fn start() -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("server")
            .enable_all()
            .build()?;
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(AtomicUsize::new(0));
        let (accepted, served) = (connections.clone(), requests.clone());
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("a listener");
            while let Ok((stream, _)) = listener.accept().await {
                accepted.fetch_add(1, Ordering::SeqCst);
                let served = served.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        served.fetch_add(1, Ordering::SeqCst);
                        std::future::ready(Ok::<_, Infallible>(respond(&request)))
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .keep_alive(true)
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Self {
            addr,
            connections,
            requests,
            _runtime: runtime,
        })
    }
}
