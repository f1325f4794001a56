//! A synchronous storage trait implemented over an async object store, and used from plain
//! threads, a rayon pool and tokio tasks at once.
//!
//! Much code is written against a synchronous interface that cannot become async: a plugin
//! API, a trait from another crate, a callback. Here that is `BlobStore`, with `put`, `get`
//! and `delete`. `ObjectStoreBlobs` implements it over `object_store` (an HTTP store here;
//! S3, GCS or Azure would be the same code), one client for the whole program, each method
//! one call to the bridge whose future borrows `self`, the key and the value.
//!
//! The program starts a loopback HTTP server that keeps blobs in memory (PUT, GET, HEAD,
//! DELETE), then writes and reads back blobs from 4 plain threads, a rayon pool of 4 and 8
//! tasks on a multi-thread tokio runtime, all at the same time; then every context reads
//! every other context's blobs; then some blobs are deleted and must be reported missing.
//! Every value is checked. It prints the totals and exits; non-zero on any wrong value.
//!
//! ```sh
//! cargo run --manifest-path bridge-bench/Cargo.toml -p bridge-examples --bin sync_trait_over_object_store
//! ```

use anyhow::{Context as _, ensure};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use object_store::path::Path;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt, PutPayload};
use rayon::prelude::*;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Blobs each context writes.
const BLOBS_PER_CONTEXT: usize = 48;
/// Plain threads, rayon threads and tokio tasks.
const THREADS: usize = 4;
const RAYON_THREADS: usize = 4;
const TOKIO_TASKS: usize = 8;

// ---------------------------------------------------------------------------------------
// The synchronous interface, and its implementation over an async object store.

/// Synchronous blob storage: what the rest of the program is written against.
trait BlobStore: Send + Sync {
    fn put(&self, key: &str, value: &[u8]) -> anyhow::Result<()>;
    fn get(&self, key: &str) -> anyhow::Result<Vec<u8>>;
    fn delete(&self, key: &str) -> anyhow::Result<()>;
}

/// [`BlobStore`] over any `object_store` backend.
struct ObjectStoreBlobs {
    store: Arc<dyn ObjectStore>,
}

impl ObjectStoreBlobs {
    /// Runs one store call from synchronous code, wherever that is.
    ///
    /// `bridge::spawn_io(..).wait()` rather than the plain `bridge::run_blocking`, as the
    /// guide advises for clients shared across threads and runtimes: the client's pooled
    /// connections are driven by tasks spawned on whichever runtime drives the call that
    /// opens them. On the shared I/O runtime that is always the bridge's own runtime, which
    /// outlives the program's; through the plain call, a connection opened from a tokio task
    /// is driven by that task's runtime, and a request that another thread has in flight on
    /// it fails if that runtime is dropped meanwhile. (This program drops its runtime only
    /// between phases, so the plain call passes here too.) The task is `'static`: the call
    /// gets its own handle on the store.
    fn run<F, Fut>(&self, call: F) -> Fut::Output
    where
        F: FnOnce(Arc<dyn ObjectStore>) -> Fut,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        bridge::spawn_io(call(Arc::clone(&self.store))).wait()
    }
}

impl BlobStore for ObjectStoreBlobs {
    fn put(&self, key: &str, value: &[u8]) -> anyhow::Result<()> {
        let path = Path::parse(key)?;
        let payload = PutPayload::from(value.to_vec());
        self.run(|store| async move { store.put(&path, payload).await })?;
        Ok(())
    }

    fn get(&self, key: &str) -> anyhow::Result<Vec<u8>> {
        let path = Path::parse(key)?;
        let bytes = self.run(|store| async move { store.get(&path).await?.bytes().await })?;
        Ok(bytes.to_vec())
    }

    fn delete(&self, key: &str) -> anyhow::Result<()> {
        let path = Path::parse(key)?;
        self.run(|store| async move { store.delete(&path).await })?;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Code written against the trait: it knows nothing of async.

/// The value stored under `key`: 64 B to 32 KiB of bytes that depend on the key.
fn value_for(key: &str) -> Vec<u8> {
    let mut hasher = DefaultHasher::new();
    key.hash(&mut hasher);
    let mut state = hasher.finish() | 1;
    let len = 64 + (state % (32 * 1024 - 64)) as usize;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

fn keys_of(context: &str) -> Vec<String> {
    (0..BLOBS_PER_CONTEXT)
        .map(|i| format!("{context}/blob-{i:03}"))
        .collect()
}

fn write_and_check(store: &dyn BlobStore, key: &str) -> anyhow::Result<usize> {
    let value = value_for(key);
    store.put(key, &value)?;
    check(store, key)
}

fn check(store: &dyn BlobStore, key: &str) -> anyhow::Result<usize> {
    let value = store.get(key)?;
    ensure!(
        value == value_for(key),
        "{key}: the value read back differs"
    );
    Ok(value.len())
}

/// Runs `work` for every key of `context`: split over plain threads.
fn on_threads(
    store: &dyn BlobStore,
    keys: &[String],
    work: fn(&dyn BlobStore, &str) -> anyhow::Result<usize>,
) -> anyhow::Result<usize> {
    std::thread::scope(|scope| {
        let workers: Vec<_> = keys
            .chunks(keys.len().div_ceil(THREADS))
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .map(|key| work(store, key))
                        .sum::<anyhow::Result<usize>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().expect("a thread panicked"))
            .sum()
    })
}

/// Runs `work` for every key, on a rayon pool.
fn on_rayon(
    pool: &rayon::ThreadPool,
    store: &dyn BlobStore,
    keys: &[String],
    work: fn(&dyn BlobStore, &str) -> anyhow::Result<usize>,
) -> anyhow::Result<usize> {
    pool.install(|| keys.par_iter().map(|key| work(store, key)).sum())
}

/// Runs `work` for every key, in tasks on a tokio runtime: synchronous code called from
/// async code, as a handler calling a synchronous library would.
fn on_tokio(
    runtime: &tokio::runtime::Runtime,
    store: &Arc<dyn BlobStore>,
    keys: &[String],
    work: fn(&dyn BlobStore, &str) -> anyhow::Result<usize>,
) -> anyhow::Result<usize> {
    runtime.block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        for chunk in keys.chunks(keys.len().div_ceil(TOKIO_TASKS)) {
            let (store, chunk) = (store.clone(), chunk.to_vec());
            tasks.spawn(async move {
                chunk
                    .iter()
                    .map(|key| work(&*store, key))
                    .sum::<anyhow::Result<usize>>()
            });
        }
        let mut bytes = 0;
        while let Some(joined) = tasks.join_next().await {
            bytes += joined.context("a tokio task panicked")??;
        }
        Ok(bytes)
    })
}

fn main() -> anyhow::Result<()> {
    let server = Server::start()?;
    let store = object_store::http::HttpBuilder::new()
        .with_url(format!("http://{}", server.addr))
        .with_client_options(ClientOptions::new().with_allow_http(true))
        .build()?;
    let blobs: Arc<dyn BlobStore> = Arc::new(ObjectStoreBlobs {
        store: Arc::new(store),
    });

    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(RAYON_THREADS)
        .thread_name(|i| format!("rayon-{i}"))
        .build()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let (thread_keys, rayon_keys, tokio_keys) =
        (keys_of("threads"), keys_of("rayon"), keys_of("tokio"));
    let all_keys: Vec<String> = [&thread_keys, &rayon_keys, &tokio_keys]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    let started = Instant::now();

    // 1. Every context writes its blobs and reads them back, all at once.
    let written = std::thread::scope(|scope| {
        let store = &*blobs;
        let threads = scope.spawn(|| on_threads(store, &thread_keys, write_and_check));
        let rayon = scope.spawn(|| on_rayon(&pool, store, &rayon_keys, write_and_check));
        let tokio = scope.spawn(|| on_tokio(&runtime, &blobs, &tokio_keys, write_and_check));
        let join = |worker: std::thread::ScopedJoinHandle<'_, anyhow::Result<usize>>| {
            worker.join().expect("a context panicked")
        };
        anyhow::Ok([
            join(threads).context("plain threads")?,
            join(rayon).context("rayon")?,
            join(tokio).context("tokio")?,
        ])
    })?;

    // 2. Every context reads every context's blobs, all at once.
    let read = std::thread::scope(|scope| {
        let store = &*blobs;
        let all = &all_keys;
        let threads = scope.spawn(|| on_threads(store, all, check));
        let rayon = scope.spawn(|| on_rayon(&pool, store, all, check));
        let tokio = scope.spawn(|| on_tokio(&runtime, &blobs, all, check));
        let join = |worker: std::thread::ScopedJoinHandle<'_, anyhow::Result<usize>>| {
            worker.join().expect("a context panicked")
        };
        anyhow::Ok([
            join(threads).context("plain threads")?,
            join(rayon).context("rayon")?,
            join(tokio).context("tokio")?,
        ])
    })?;
    let expected: usize = all_keys.iter().map(|key| value_for(key).len()).sum();
    ensure!(
        written.iter().sum::<usize>() == expected,
        "written bytes {written:?} do not add up to {expected}"
    );
    ensure!(
        read == [expected; 3],
        "read bytes {read:?}, expected {expected} per context"
    );

    // The tokio runtime goes away; the client, its connections and the blobs stay usable.
    drop(runtime);

    // 3. Delete every third blob from this thread; those must be missing, the rest intact.
    let mut deleted = 0;
    for (i, key) in all_keys.iter().enumerate() {
        if i % 3 == 0 {
            blobs.delete(key)?;
            deleted += 1;
        }
    }
    for (i, key) in all_keys.iter().enumerate() {
        if i % 3 != 0 {
            check(&*blobs, key)?;
            continue;
        }
        match blobs.get(key) {
            Ok(_) => anyhow::bail!("{key}: still there after delete"),
            Err(error) => ensure!(
                matches!(
                    error.downcast_ref::<object_store::Error>(),
                    Some(object_store::Error::NotFound { .. })
                ),
                "{key}: expected NotFound, got: {error:#}"
            ),
        }
    }
    let elapsed = started.elapsed();

    let requests = server.requests.lock().unwrap().clone();
    let count = |method: &str| requests.get(method).copied().unwrap_or(0);
    println!(
        "sync_trait_over_object_store: {} blobs ({:.1} MB) written by {THREADS} threads, a \
         rayon pool of {RAYON_THREADS} and {TOKIO_TASKS} tokio tasks at once, each read back; \
         all read again by every context; {deleted} deleted and reported NotFound; every \
         value checked, in {:.2} s ({} PUT, {} GET, {} DELETE on {} connections)",
        all_keys.len(),
        expected as f64 / 1e6,
        elapsed.as_secs_f64(),
        count("PUT"),
        count("GET"),
        count("DELETE"),
        server.connections.lock().unwrap(),
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The loopback server: blobs in memory, HTTP/1.1 with keep-alive, on a runtime of its own.

#[derive(Default)]
struct Blobs {
    /// Each blob and the version that wrote it (its ETag).
    objects: HashMap<String, (Bytes, u64)>,
    versions: u64,
}

struct Server {
    addr: SocketAddr,
    connections: Arc<Mutex<usize>>,
    /// Requests served, by method.
    requests: Arc<Mutex<HashMap<String, usize>>>,
    _runtime: tokio::runtime::Runtime,
}

async fn respond(
    request: Request<Incoming>,
    blobs: Arc<Mutex<Blobs>>,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let key = request.uri().path().trim_start_matches('/').to_owned();
    let method = request.method().clone();
    let response = match method {
        Method::PUT => {
            let body = request.into_body().collect().await?.to_bytes();
            let mut blobs = blobs.lock().unwrap();
            blobs.versions += 1;
            let version = blobs.versions;
            blobs.objects.insert(key, (body, version));
            with_etag(empty(StatusCode::CREATED), version)
        }
        Method::GET | Method::HEAD => match blobs.lock().unwrap().objects.get(&key) {
            Some((body, version)) => {
                let mut response = Response::new(Full::new(if method == Method::GET {
                    body.clone()
                } else {
                    Bytes::new()
                }));
                let len = HeaderValue::from(body.len());
                response.headers_mut().insert(header::CONTENT_LENGTH, len);
                with_etag(response, *version)
            }
            None => empty(StatusCode::NOT_FOUND),
        },
        Method::DELETE => match blobs.lock().unwrap().objects.remove(&key) {
            Some(_) => empty(StatusCode::NO_CONTENT),
            None => empty(StatusCode::NOT_FOUND),
        },
        _ => empty(StatusCode::METHOD_NOT_ALLOWED),
    };
    Ok(response)
}

fn empty(status: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = status;
    response
}

fn with_etag(mut response: Response<Full<Bytes>>, version: u64) -> Response<Full<Bytes>> {
    let etag = HeaderValue::from_str(&format!("\"v{version}\"")).expect("a valid ETag");
    response.headers_mut().insert(header::ETAG, etag);
    response
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
        let blobs = Arc::new(Mutex::new(Blobs::default()));
        let connections = Arc::new(Mutex::new(0));
        let requests = Arc::new(Mutex::new(HashMap::new()));
        let (accepted, served) = (connections.clone(), requests.clone());
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("a listener");
            while let Ok((stream, _)) = listener.accept().await {
                *accepted.lock().unwrap() += 1;
                let (blobs, served) = (blobs.clone(), served.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                        *served
                            .lock()
                            .unwrap()
                            .entry(request.method().to_string())
                            .or_insert(0) += 1;
                        respond(request, blobs.clone())
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
