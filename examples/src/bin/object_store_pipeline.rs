//! An object's bytes read on the I/O side, decoded into records on the CPU side, and
//! consumed by plain synchronous code: the three sides of a query engine's scan, each on the
//! pool that suits it.
//!
//! The program starts a loopback HTTP object server holding one object of a few MiB:
//! newline-separated `id,amount,name` records. Then, from a synchronous `main`:
//!
//! 1. `bridge::spawn_io` sends the GET on the shared I/O runtime, and
//!    `bridge::stream::on_io` reads the object's body there (`get(..).into_stream()`), at
//!    most 8 chunks ahead of the decoder;
//! 2. `bridge::stream::on_cpu` runs the decoder on rayon: it splits the chunks into lines
//!    (a line cut between two chunks is completed by the next), parses each record and
//!    checksums its bytes, and yields one batch per chunk, at most 4 ahead of the consumer;
//! 3. `bridge::iter_blocking` gives `main` an `Iterator` over the batches.
//!
//! Every record is checked against the one the server was given (its id in order, its
//! fields), and the totals (records, bytes, the sum of the amounts, the checksum of every
//! line) against the source's; each chunk must have been read on an I/O runtime thread and
//! each batch decoded on a rayon thread. It prints the totals and exits; non-zero on any
//! mismatch.
//!
//! ```sh
//! cargo run --manifest-path bridge-bench/Cargo.toml -p bridge-examples --bin object_store_pipeline
//! ```

use anyhow::{Context as _, bail, ensure};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use object_store::path::Path;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Records in the object (about 4.6 MB of text).
const RECORDS: u64 = 160_000;
/// Chunks the I/O side may read ahead of the decoder.
const READ_AHEAD: usize = 8;
/// Batches the decoder may make ahead of `main`.
const DECODE_AHEAD: usize = 4;
/// Where the object lives.
const OBJECT: &str = "tables/events.csv";

// ---------------------------------------------------------------------------------------
// The records, as the source writes them and the decoder reads them.

#[derive(Debug, PartialEq, Eq)]
struct Record {
    id: u64,
    amount: u64,
    name: String,
}

/// The record written with `id`: fields that depend on the id, names of varying length.
fn record(id: u64) -> Record {
    let mut state = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    state ^= state >> 29;
    let amount = state % 1_000_000;
    let name: String = (0..3 + state % 24)
        .map(|i| char::from(b'a' + ((state >> (i % 16 * 4)) % 26) as u8))
        .collect();
    Record { id, amount, name }
}

/// The CPU work per line: a 64-bit FNV-1a hash of its bytes.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The totals that the consumer must find: records, bytes, the amounts' sum and the
/// wrapping sum of every line's hash.
#[derive(Debug, Default, PartialEq, Eq, Clone, Copy)]
struct Totals {
    records: u64,
    bytes: u64,
    amount: u64,
    checksum: u64,
}

impl Totals {
    fn add_line(&mut self, line: &[u8], amount: u64) {
        self.records += 1;
        self.bytes += line.len() as u64 + 1; // and its newline
        self.amount += amount;
        self.checksum = self.checksum.wrapping_add(fnv1a(line));
    }
}

/// The object's bytes and their totals.
fn object() -> (Bytes, Totals) {
    let mut text = Vec::new();
    let mut totals = Totals::default();
    for id in 0..RECORDS {
        let Record { id, amount, name } = record(id);
        let line = format!("{id},{amount},{name}");
        totals.add_line(line.as_bytes(), amount);
        text.extend_from_slice(line.as_bytes());
        text.push(b'\n');
    }
    (Bytes::from(text), totals)
}

// ---------------------------------------------------------------------------------------
// The decoder: chunks in, batches of records out.

/// One decoded chunk: its records and their totals.
struct Batch {
    records: Vec<Record>,
    totals: Totals,
    /// Whether the decoder ran on a rayon thread.
    on_rayon: bool,
}

/// Parses the complete lines in `lines` (each ends with a newline, or is the object's last).
fn decode(lines: &[u8]) -> anyhow::Result<Batch> {
    let mut batch = Batch {
        records: Vec::new(),
        totals: Totals::default(),
        on_rayon: rayon::current_thread_index().is_some(),
    };
    for line in lines.split(|&b| b == b'\n').filter(|line| !line.is_empty()) {
        let text = std::str::from_utf8(line).context("a record that is not UTF-8")?;
        let mut fields = text.splitn(3, ',');
        let mut field = |what| {
            fields
                .next()
                .with_context(|| format!("no {what} in {text:?}"))
        };
        let id = field("id")?
            .parse()
            .with_context(|| format!("id of {text:?}"))?;
        let amount = field("amount")?
            .parse()
            .with_context(|| format!("amount of {text:?}"))?;
        let name = field("name")?.to_owned();
        batch.totals.add_line(line, amount);
        batch.records.push(Record { id, amount, name });
    }
    Ok(batch)
}

/// The batches of `chunks`: one per chunk, with the lines completed so far; the bytes after
/// a chunk's last newline wait for the next chunk.
fn decoder<S>(chunks: S) -> impl Stream<Item = anyhow::Result<Batch>> + Send + 'static
where
    S: Stream<Item = object_store::Result<Bytes>> + Send + Unpin + 'static,
{
    futures::stream::unfold(Some((chunks, Vec::new())), |state| async move {
        let (mut chunks, mut rest) = state?;
        match chunks.next().await {
            Some(Ok(chunk)) => {
                rest.extend_from_slice(&chunk);
                let complete = rest
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |at| at + 1);
                let batch = decode(&rest[..complete]);
                rest.drain(..complete);
                Some((batch, Some((chunks, rest))))
            }
            Some(Err(error)) => Some((Err(error.into()), None)),
            None if rest.is_empty() => None,
            // A last line without its newline.
            None => Some((decode(&rest), None)),
        }
    })
}

// ---------------------------------------------------------------------------------------
// The program.

fn main() -> anyhow::Result<()> {
    let (object, expected) = object();
    let server = Server::start(object.clone())?;
    let store: Arc<dyn ObjectStore> = Arc::new(
        object_store::http::HttpBuilder::new()
            .with_url(format!("http://{}", server.addr))
            .with_client_options(ClientOptions::new().with_allow_http(true))
            .build()?,
    );
    let started = Instant::now();

    // 1. The request and the body, on the I/O side.
    let get = {
        let store = Arc::clone(&store);
        bridge::spawn_io(async move { store.get(&Path::from(OBJECT)).await })
    };
    let body = get.wait().context("GET the object")?;
    ensure!(
        body.meta.size == object.len() as u64,
        "the object's size is {}, expected {}",
        body.meta.size,
        object.len()
    );
    let chunks_read = Arc::new(AtomicUsize::new(0));
    let chunks_off_io = Arc::new(AtomicUsize::new(0));
    let (read, off_io) = (Arc::clone(&chunks_read), Arc::clone(&chunks_off_io));
    let body = body.into_stream().inspect(move |_| {
        // ORDERING: a counter read after the streams have ended, which orders everything.
        read.fetch_add(1, Ordering::Relaxed);
        let name = std::thread::current().name().map(str::to_owned);
        if !name.is_some_and(|name| name.starts_with("bridge-io")) {
            // ORDERING: as above.
            off_io.fetch_add(1, Ordering::Relaxed);
        }
    });
    let chunks = bridge::stream::on_io(body, READ_AHEAD);

    // 2. The decoder, on rayon.
    let batches = bridge::stream::on_cpu(decoder(chunks), DECODE_AHEAD);

    // 3. The consumer: this thread, synchronous code.
    let mut found = Totals::default();
    let (mut batch_count, mut off_rayon) = (0, 0);
    for batch in bridge::iter_blocking(batches) {
        let batch = batch?;
        batch_count += 1;
        off_rayon += usize::from(!batch.on_rayon);
        for got in &batch.records {
            let want = record(found.records);
            if *got != want {
                bail!("record {}: got {got:?}, expected {want:?}", found.records);
            }
            found.records += 1;
        }
        found.bytes += batch.totals.bytes;
        found.amount += batch.totals.amount;
        found.checksum = found.checksum.wrapping_add(batch.totals.checksum);
    }
    let elapsed = started.elapsed();

    ensure!(
        found == expected,
        "decoded {found:?}, the source has {expected:?}"
    );
    // ORDERING: the producers have finished: their last item happened-before its receipt.
    let chunk_count = chunks_read.load(Ordering::Relaxed);
    let chunks_off_io = chunks_off_io.load(Ordering::Relaxed);
    ensure!(
        chunks_off_io == 0,
        "{chunks_off_io} of {chunk_count} chunks were read off the I/O runtime"
    );
    ensure!(
        off_rayon == 0,
        "{off_rayon} of {batch_count} batches were decoded off rayon"
    );
    ensure!(
        batch_count == chunk_count,
        "{batch_count} batches for {chunk_count} chunks"
    );
    println!(
        "object_store_pipeline: {} records ({:.1} MB) read in {chunk_count} chunks on the I/O \
         runtime, decoded in {batch_count} batches on rayon, consumed by synchronous code; \
         every record, the amounts' sum and the checksum match the source, in {:.2} s",
        found.records,
        found.bytes as f64 / 1e6,
        elapsed.as_secs_f64(),
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The loopback object server: one object in memory, GET and HEAD, on a runtime of its own.

struct Server {
    addr: SocketAddr,
    _runtime: tokio::runtime::Runtime,
}

fn respond(request: &Request<Incoming>, object: &Bytes) -> Response<Full<Bytes>> {
    let found = request.uri().path().trim_start_matches('/') == OBJECT;
    let method = request.method();
    if !found || !(method == Method::GET || method == Method::HEAD) {
        let mut response = Response::new(Full::new(Bytes::new()));
        *response.status_mut() = if found {
            StatusCode::METHOD_NOT_ALLOWED
        } else {
            StatusCode::NOT_FOUND
        };
        return response;
    }
    let body = if method == Method::GET {
        object.clone()
    } else {
        Bytes::new()
    };
    let mut response = Response::new(Full::new(body));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(object.len()));
    headers.insert(header::ETAG, HeaderValue::from_static("\"v1\""));
    response
}

impl Server {
    fn start(object: Bytes) -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("server")
            .enable_all()
            .build()?;
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("a listener");
            while let Ok((stream, _)) = listener.accept().await {
                let object = object.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                        let response = respond(&request, &object);
                        async move { Ok::<_, hyper::Error>(response) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Self {
            addr,
            _runtime: runtime,
        })
    }
}
