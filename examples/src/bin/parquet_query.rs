//! A synchronous `query()` over a Parquet file in an object store, written twice: with the
//! decode left on the I/O side, where the bridge names it, and with the reads on the I/O side
//! and the decode on rayon, the next row groups read while the current one decodes.
//!
//! The program writes a Parquet file of 8 row groups of 65,536 rows (`quantity`, an int64,
//! and `price`, a float64; 8.4 MB, plain encoding, no compression) into an in-memory store
//! whose reads take time as a remote store's do: `object_store::throttle::ThrottledStore`
//! delays each request by 5 ms and each byte by 10 ns (100 MB/s), so that reading a row
//! group takes about 15 ms. The store is wrapped in `bridge::object_store::IoStore`: every
//! request runs on the bridge's I/O runtime, whoever makes it. `StoreReader` is the reader to
//! copy: parquet's `AsyncFileReader` over any `ObjectStore` (parquet deprecates its own
//! `ParquetObjectReader` since 59.2).
//!
//! The query: over the rows with a quantity of 50 or more, how many there are, their total
//! quantity and the sum of a score per row. The score stands for a real query's per-row
//! expressions (a user-defined function, a model): 48 logarithms and sines, most of the
//! 30 ms or so that decoding and evaluating a row group takes. Both versions are plain
//! synchronous functions, called from `main`:
//!
//! 1. `query_naive` runs the whole scan (parquet's `ParquetRecordBatchStream` over
//!    `StoreReader`, and the query over each batch) as one future on the I/O runtime:
//!    `bridge::spawn_io(scan).wait()`. Each row group is decoded and evaluated inside one
//!    poll of that task, which holds an I/O worker for about 30 ms; every other request on
//!    that worker waits meanwhile. The bridge times each poll of the futures it runs on the
//!    I/O side, counts each one past `bridge::configure().slow_poll` (10 ms by default) in
//!    `bridge::metrics().io.slow_polls` and, with threadbridge's feature `tracing`, logs a
//!    warning that names the `spawn_io` call. As the program prints it (one line):
//!
//!    ```text
//!    2026-12-05T03:16:04.054300Z  WARN bridge-io bridge: a poll of a future spawned at examples/src/bin/parquet_query.rs:277:5 has held an I/O worker for 28.831333ms: CPU work (a decode, a parse, compression) or a blocking call runs on the I/O side, and every other task of that worker waits meanwhile. Move the CPU work to bridge::spawn or bridge::cpu::spawn_future, and blocking calls to tokio::task::spawn_blocking site=examples/src/bin/parquet_query.rs:277:5 held=28.831333ms still_running=false
//!    ```
//!
//! 2. `query_bridged` reads the metadata, then streams each row group's column chunks from
//!    the I/O side, one request per row group, at most 2 row groups ahead of the decoder
//!    (`bridge::stream::on_io`); decodes them with parquet's push decoder and evaluates them
//!    on rayon (`bridge::stream::on_cpu`); and adds up the row groups' answers itself
//!    (`bridge::iter_blocking`). No poll of the I/O side runs long, and while rayon decodes
//!    one row group the next ones are read.
//!
//! The program checks that both versions find the answer computed when the file was written;
//! that the naive one raised `slow_polls`, with one warning per slow poll, each naming its
//! `spawn_io` line (it prints the line it expects); and that the bridged one raised nothing.
//! Then it times the bridged query with the read-ahead and without it (`on_io` with bound 0:
//! a row group is read only when the decoder asks for it, and decoded after its read), 5
//! runs each (3 in a debug build), and prints the shortest and the median times. It exits
//! non-zero on any failed check.
//!
//! Measured on this machine (AMD EPYC, 2 vCPUs shared with other builds; release build; the
//! medians of 5 program runs): without the read-ahead a query took 347 to 394 ms, with it 238
//! to 270 ms. The overlap saves 109 to 151 ms, about a third: nearly all of the 8 reads of
//! 15 ms that it can hide behind the decode. Run
//! `cargo run --release --manifest-path bridge-bench/Cargo.toml -p bridge-examples --bin parquet_query` to see yours. The debug build
//! (`.ci/examples` runs it) takes about 3 s; the release build about 4 s.
//!
//! ```sh
//! cargo run --manifest-path bridge-bench/Cargo.toml -p bridge-examples --bin parquet_query
//! cargo run --release --manifest-path bridge-bench/Cargo.toml -p bridge-examples --bin parquet_query  # the timings above
//! ```

use anyhow::{Context as _, bail, ensure};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{
    ArrayRef, ArrowPrimitiveType, Float64Array, Int64Array, PrimitiveArray, RecordBatch,
};
use bridge::object_store::IoStore;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, Stream, StreamExt, TryStreamExt};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::throttle::{ThrottleConfig, ThrottledStore};
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use parquet::DecodeResult;
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::arrow::async_reader::AsyncFileReader;
use parquet::arrow::push_decoder::{ParquetPushDecoder, ParquetPushDecoderBuilder};
use parquet::arrow::{ArrowWriter, ParquetRecordBatchStreamBuilder};
use parquet::errors::ParquetError;
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader, RowGroupMetaData};
use parquet::file::properties::WriterProperties;
use std::io::IsTerminal;
use std::ops::{AddAssign, Range};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer};

/// Row groups in the file.
const ROW_GROUPS: usize = 8;
/// Rows per row group; every batch the queries decode is one whole row group.
const ROWS_PER_GROUP: usize = 64 * 1024;
/// The query's filter: the rows with at least this quantity.
const MIN_QUANTITY: i64 = 50;
/// Rounds of the score's arithmetic per matching row (see [`score`]).
const SCORE_ROUNDS: usize = 24;
/// What each request to the store waits before its first byte.
const REQUEST_LATENCY: Duration = Duration::from_millis(5);
/// What each byte of a response takes: 10 ns, 100 MB/s per request.
const PER_BYTE: Duration = Duration::from_nanos(10);
/// The bytes at the end of the file read in the first request for its metadata: the footer
/// and, when it fits, all the metadata, in one request.
const FOOTER_PREFETCH: usize = 64 * 1024;
/// Row groups the bridged query reads ahead of its decoder.
const READ_AHEAD: usize = 2;
/// Timed runs of the bridged query, with and without the read-ahead.
const RUNS: usize = if cfg!(debug_assertions) { 3 } else { 5 };
/// Where the file lives.
const OBJECT: &str = "tables/orders.parquet";

// ---------------------------------------------------------------------------------------
// The reader: parquet's async reader over any object store.

/// A Parquet file in an object store, for parquet's async reader
/// (`ParquetRecordBatchStreamBuilder`, `ParquetMetaDataReader`): range reads go to
/// `get_range` and `get_ranges`, and the metadata comes from the end of the file in one
/// request. (Parquet deprecates its own `ParquetObjectReader`, since 59.2, for readers like
/// this one.)
///
/// Given a `bridge::object_store::IoStore`, every read runs on the bridge's I/O runtime,
/// whoever polls it: a decoder on rayon, synchronous code, a task of another runtime.
#[derive(Clone, Debug)]
struct StoreReader {
    store: Arc<dyn ObjectStore>,
    path: Path,
    size: u64,
}

impl StoreReader {
    /// The file at `path`: one HEAD request for its size.
    async fn open(store: Arc<dyn ObjectStore>, path: Path) -> object_store::Result<Self> {
        let size = store.head(&path).await?.size;
        Ok(Self { store, path, size })
    }
}

fn store_error(error: object_store::Error) -> ParquetError {
    ParquetError::External(Box::new(error))
}

impl AsyncFileReader for StoreReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, parquet::errors::Result<Bytes>> {
        async move {
            let path = &self.path;
            self.store.get_range(path, range).await.map_err(store_error)
        }
        .boxed()
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<Range<u64>>,
    ) -> BoxFuture<'_, parquet::errors::Result<Vec<Bytes>>> {
        async move {
            let path = &self.path;
            self.store
                .get_ranges(path, &ranges)
                .await
                .map_err(store_error)
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, parquet::errors::Result<Arc<ParquetMetaData>>> {
        async move {
            let size = self.size;
            let metadata = ParquetMetaDataReader::new()
                .with_arrow_reader_options(options)
                .with_prefetch_hint(Some(FOOTER_PREFETCH))
                .load_and_finish(self, size)
                .await?;
            Ok(Arc::new(metadata))
        }
        .boxed()
    }
}

// ---------------------------------------------------------------------------------------
// The query: over the rows with `quantity >= MIN_QUANTITY`, how many, their total quantity
// and the sum of their scores.

#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Answer {
    rows: u64,
    quantity: i64,
    score: f64,
}

impl std::fmt::Display for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} rows, quantity {}, score {:.3}",
            self.rows, self.quantity, self.score
        )
    }
}

impl AddAssign for Answer {
    fn add_assign(&mut self, other: Self) {
        self.rows += other.rows;
        self.quantity += other.quantity;
        self.score += other.score;
    }
}

impl Answer {
    /// The answer over one row group's columns. Every side (the source, both queries)
    /// computes a row group's answer with this and adds them up in row-group order, so the
    /// sums of the scores agree to the bit.
    fn of(quantity: &[i64], price: &[f64]) -> Self {
        let mut answer = Self::default();
        for (&quantity, &price) in quantity.iter().zip(price) {
            if quantity >= MIN_QUANTITY {
                answer.rows += 1;
                answer.quantity += quantity;
                answer.score += score(quantity, price);
            }
        }
        answer
    }
}

/// The per-row expression. It stands for a real query's (a user-defined function, a model's
/// score): [`SCORE_ROUNDS`] rounds of a logarithm and a sine, the bulk of the CPU work of a
/// row group's scan.
fn score(quantity: i64, price: f64) -> f64 {
    let mut x = price;
    for _ in 0..SCORE_ROUNDS {
        x = 1.0 + x.ln_1p() + x.sin().abs();
    }
    x * quantity as f64
}

/// The column `name` of `batch`, as an array of `T`.
fn column<'a, T: ArrowPrimitiveType>(
    batch: &'a RecordBatch,
    name: &str,
) -> anyhow::Result<&'a PrimitiveArray<T>> {
    batch
        .column_by_name(name)
        .and_then(|column| column.as_primitive_opt::<T>())
        .with_context(|| format!("no column {name} of type {}", T::DATA_TYPE))
}

/// The answer over one decoded row group.
fn evaluate(batch: &RecordBatch) -> anyhow::Result<Answer> {
    let quantity = column::<Int64Type>(batch, "quantity")?;
    let price = column::<Float64Type>(batch, "price")?;
    Ok(Answer::of(quantity.values(), price.values()))
}

// ---------------------------------------------------------------------------------------
// The two queries.

/// The scan left on the I/O side: the reads, the decode and the query of every row group in
/// one future, run by `bridge::spawn_io`. Each row group is decoded and evaluated inside one
/// poll of that task, which holds its I/O worker meanwhile.
fn query_naive(store: &Arc<dyn ObjectStore>, path: &Path) -> anyhow::Result<Answer> {
    let (store, path) = (Arc::clone(store), path.clone());
    let scan = async move {
        let reader = StoreReader::open(store, path).await?;
        let mut batches = ParquetRecordBatchStreamBuilder::new(reader)
            .await?
            .with_batch_size(ROWS_PER_GROUP)
            .build()?;
        let mut answer = Answer::default();
        while let Some(batch) = batches.try_next().await? {
            answer += evaluate(&batch)?;
        }
        anyhow::Ok(answer)
    };
    bridge::spawn_io(scan).wait()
}

/// The scan split between the sides: the reads on the I/O side, at most `read_ahead` row
/// groups ahead of the decoder (`bridge::stream::on_io`); the decode and the query on rayon
/// (`bridge::stream::on_cpu`); the answers added up here.
fn query_bridged(
    store: &Arc<dyn ObjectStore>,
    path: &Path,
    read_ahead: usize,
) -> anyhow::Result<Answer> {
    // The metadata: a HEAD and one read at the end of the file, on the I/O side.
    let mut reader = bridge::run_blocking(StoreReader::open(Arc::clone(store), path.clone()))?;
    let metadata = bridge::run_blocking(reader.get_metadata(None))?;

    // 1. The reads, on the I/O side: one request per row group, for its column chunks.
    let plan: Vec<Vec<Range<u64>>> = metadata.row_groups().iter().map(chunks).collect();
    let reads = futures::stream::iter(plan).then(move |ranges| {
        let mut reader = reader.clone();
        async move {
            let bytes = reader.get_byte_ranges(ranges.clone()).await?;
            Ok::<_, ParquetError>((ranges, bytes))
        }
    });
    let reads = bridge::stream::on_io(reads, read_ahead);

    // 2. The decode and the query, on rayon: parquet's push decoder takes the bytes from the
    //    reads as it needs them.
    let decoder = ParquetPushDecoderBuilder::try_new_decoder(metadata)?
        .with_batch_size(ROWS_PER_GROUP)
        .build()?;
    let answers = bridge::stream::on_cpu(decode(decoder, reads), 1);

    // 3. The answer, here.
    let mut answer = Answer::default();
    for row_group in bridge::iter_blocking(answers) {
        answer += row_group?;
    }
    Ok(answer)
}

/// The byte ranges of a row group's column chunks: what the decoder asks for when it reads
/// every column of the row group.
fn chunks(row_group: &RowGroupMetaData) -> Vec<Range<u64>> {
    row_group
        .columns()
        .iter()
        .map(|column| {
            let (start, length) = column.byte_range();
            start..start + length
        })
        .collect()
}

/// The row groups' answers, in order: `decoder` decodes each from the column chunks that
/// `reads` brings (one item per row group, in order), and the query evaluates it.
fn decode<R>(decoder: ParquetPushDecoder, reads: R) -> impl Stream<Item = anyhow::Result<Answer>>
where
    R: Stream<Item = parquet::errors::Result<(Vec<Range<u64>>, Vec<Bytes>)>> + Unpin,
{
    futures::stream::try_unfold((decoder, reads), |(mut decoder, mut reads)| async move {
        loop {
            match decoder.try_next_reader()? {
                DecodeResult::NeedsData(wanted) => {
                    let Some(read) = reads.next().await else {
                        bail!("the reads ended, and the decoder wants {wanted:?}");
                    };
                    let (ranges, bytes) = read?;
                    ensure!(
                        wanted.iter().all(|range| ranges.contains(range)),
                        "the decoder wants {wanted:?}, the next read brought {ranges:?}"
                    );
                    decoder.push_ranges(ranges, bytes)?;
                }
                DecodeResult::Data(row_group) => {
                    ensure!(
                        rayon::current_thread_index().is_some(),
                        "a row group was decoded off rayon"
                    );
                    let mut answer = Answer::default();
                    for batch in row_group {
                        answer += evaluate(&batch?)?;
                    }
                    return Ok(Some((answer, (decoder, reads))));
                }
                DecodeResult::Finished => return Ok(None),
            }
        }
    })
}

// ---------------------------------------------------------------------------------------
// The file, the store and what the log says.

/// The file's bytes and the query's answer over its rows.
fn file() -> anyhow::Result<(Bytes, Answer)> {
    let mut expected = Answer::default();
    let mut batches = Vec::with_capacity(ROW_GROUPS);
    for group in 0..ROW_GROUPS {
        let rows = (group * ROWS_PER_GROUP) as u64..((group + 1) * ROWS_PER_GROUP) as u64;
        let (quantity, price): (Vec<i64>, Vec<f64>) = rows
            .map(|row| {
                let mut state = row.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                state ^= state >> 29;
                (
                    1 + (state % 100) as i64,
                    1.0 + (state >> 8) as f64 / 2.0f64.powi(46),
                )
            })
            .unzip();
        expected += Answer::of(&quantity, &price);
        batches.push(RecordBatch::try_from_iter([
            ("quantity", Arc::new(Int64Array::from(quantity)) as ArrayRef),
            ("price", Arc::new(Float64Array::from(price)) as ArrayRef),
        ])?);
    }
    // Plain encoding, no compression: decoding costs what the values cost.
    let properties = WriterProperties::builder()
        .set_dictionary_enabled(false)
        .build();
    let mut bytes = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut bytes, batches[0].schema(), Some(properties))?;
    for batch in &batches {
        writer.write(batch)?;
        writer.flush()?; // one row group per batch
    }
    writer.close()?;
    Ok((Bytes::from(bytes), expected))
}

/// Where `query_naive` calls `bridge::spawn_io`, as the bridge's warnings name it:
/// `file:line:column`, found in this file's source.
fn naive_spawn_site() -> anyhow::Result<String> {
    let source = include_str!("parquet_query.rs");
    let (index, line) = source
        .lines()
        .enumerate()
        .skip_while(|(_, line)| !line.starts_with("fn query_naive("))
        .find(|(_, line)| line.trim_start().starts_with("bridge::spawn_io("))
        .context("no bridge::spawn_io call in query_naive")?;
    let column = line.len() - line.trim_start().len() + 1;
    Ok(format!("{}:{}:{column}", file!(), index + 1))
}

/// Keeps the message of every warning logged, to check what the bridge said.
#[derive(Clone, Default)]
struct Warnings(Arc<Mutex<Vec<String>>>);

impl Warnings {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl<S: tracing::Subscriber> Layer<S> for Warnings {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(message.0);
    }
}

/// The shortest and the median of `times`, in milliseconds.
fn spread(times: &mut [Duration]) -> (f64, f64) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    (ms(times[0]), ms(times[times.len() / 2]))
}

fn main() -> anyhow::Result<()> {
    // The log: warnings and above on stderr (RUST_LOG for more), and every warning kept.
    let warnings = Warnings::default();
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_target(false)
                .with_thread_names(true)
                .with_ansi(std::io::stderr().is_terminal())
                .with_writer(std::io::stderr)
                .with_filter(filter),
        )
        .with(
            warnings
                .clone()
                .with_filter(tracing::level_filters::LevelFilter::WARN),
        )
        .init();

    let (bytes, expected) = file()?;
    let size = bytes.len();
    // A store whose reads take time as a remote one's do, wrapped so that every request
    // runs on the bridge's I/O runtime.
    let throttle = ThrottleConfig {
        wait_get_per_call: REQUEST_LATENCY,
        wait_get_per_byte: PER_BYTE,
        ..ThrottleConfig::default()
    };
    let store: Arc<dyn ObjectStore> =
        Arc::new(IoStore::new(ThrottledStore::new(InMemory::new(), throttle)));
    let path = Path::from(OBJECT);
    bridge::run_blocking(store.put(&path, PutPayload::from(bytes)))?;
    println!(
        "parquet_query: {ROW_GROUPS} row groups of {ROWS_PER_GROUP} rows, {:.1} MB, in a store \
         with {REQUEST_LATENCY:?} per request and {:.0} MB/s",
        size as f64 / 1e6,
        1e3 / PER_BYTE.as_nanos() as f64,
    );

    // 1. The naive query: the decode on the I/O side, named by the bridge.
    let site = naive_spawn_site()?;
    println!("query_naive: expects warnings naming `spawned at {site}`");
    let before = bridge::metrics().io.slow_polls;
    let started = Instant::now();
    let naive = query_naive(&store, &path)?;
    let naive_time = started.elapsed();
    // The poll that finished the task is counted as it returns, just after `wait()` does.
    std::thread::sleep(Duration::from_millis(50));
    let slow_polls = bridge::metrics().io.slow_polls - before;
    ensure!(
        naive == expected,
        "query_naive found {naive:?}, the source has {expected:?}"
    );
    ensure!(
        slow_polls > 0,
        "the naive query's decode held the I/O workers, and the bridge counted no slow poll"
    );
    let named: Vec<String> = warnings
        .take()
        .into_iter()
        .filter(|message| message.contains("spawned at"))
        .collect();
    let pattern = format!("spawned at {site} ");
    ensure!(
        named.len() as u64 == slow_polls && named.iter().all(|message| message.contains(&pattern)),
        "{slow_polls} slow polls, and these warnings, which should each name `{pattern}`: \
         {named:#?}"
    );
    println!(
        "query_naive: {naive} in {:.0} ms; {slow_polls} slow polls of the I/O side, each named \
         in a warning at {site}",
        naive_time.as_secs_f64() * 1e3
    );

    // 2. The bridged query, with the read-ahead and without.
    let before = bridge::metrics().io.slow_polls;
    let (mut overlapped, mut sequential) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        for (read_ahead, times) in [(READ_AHEAD, &mut overlapped), (0, &mut sequential)] {
            let started = Instant::now();
            let answer = query_bridged(&store, &path, read_ahead)?;
            times.push(started.elapsed());
            ensure!(
                answer == expected,
                "query_bridged({read_ahead}) found {answer:?}, the source has {expected:?}"
            );
        }
    }
    let slow_polls = bridge::metrics().io.slow_polls - before;
    ensure!(
        slow_polls == 0,
        "the bridged query held an I/O worker past the slow-poll threshold {slow_polls} times: \
         {:#?}",
        warnings.take()
    );
    let (ahead_min, ahead_median) = spread(&mut overlapped);
    let (none_min, none_median) = spread(&mut sequential);
    println!(
        "query_bridged: the same answer, no slow poll; {RUNS} runs each, shortest and median:\n  \
         reads {READ_AHEAD} row groups ahead: {ahead_min:.0} ms, {ahead_median:.0} ms\n  \
         reads 0 ahead:            {none_min:.0} ms, {none_median:.0} ms\n  \
         the overlap saves {:.0} ms of {none_median:.0} ({:.0}%), medians",
        none_median - ahead_median,
        (none_median - ahead_median) / none_median * 100.0,
    );
    Ok(())
}
