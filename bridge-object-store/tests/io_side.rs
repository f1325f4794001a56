//! The wrapped store's work really runs on the I/O runtime: a store that records the name of
//! the thread of each of its calls, each poll of the streams it returns (bodies, listings,
//! deletions) and each poll of its upload's futures finds `bridge-io` (the shared runtime's
//! workers) for every one, whoever called the `IoStore` (a current-thread runtime's task, a
//! CPU-side task, synchronous code); and the name of a given runtime's threads when the
//! store was built with `IoStore::with_runtime`. It also checks that every method of the
//! trait reached the wrapped store's own method (none was left to the trait's default).
#![cfg(not(bridge_loom))]

mod common;

use async_trait::async_trait;
use bridge_object_store::IoStore;
use bytes::Bytes;
use common::{Kind, Mode, WATCHDOG, every_method, watchdog};
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
    UploadPart,
};
use std::collections::BTreeSet;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// (what, the thread it ran on, the tokio task it ran in) for each call and poll.
type Log = Arc<Mutex<Vec<(&'static str, String, Option<tokio::task::Id>)>>>;

fn record(log: &Log, what: &'static str) {
    let thread = std::thread::current()
        .name()
        .unwrap_or("<unnamed>")
        .to_owned();
    log.lock()
        .unwrap()
        .push((what, thread, tokio::task::try_id()));
}

/// The tasks the wrapped store's `what` ran in, in order.
fn tasks_of(log: &Log, what: &str) -> Vec<Option<tokio::task::Id>> {
    let log = log.lock().unwrap();
    log.iter()
        .filter(|(w, _, _)| *w == what)
        .map(|&(_, _, task)| task)
        .collect()
}

/// `stream`, recording the thread of each poll as `what`.
fn recorded<T: Send + 'static>(
    log: &Log,
    what: &'static str,
    stream: BoxStream<'static, T>,
) -> BoxStream<'static, T> {
    let log = Arc::clone(log);
    let mut stream = stream;
    futures::stream::poll_fn(move |cx| {
        record(&log, what);
        stream.poll_next_unpin(cx)
    })
    .boxed()
}

#[derive(Debug)]
struct Recording {
    inner: InMemory,
    log: Log,
}

impl fmt::Display for Recording {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Recording")
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl ObjectStore for Recording {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        record(&self.log, "put_opts");
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        record(&self.log, "put_multipart_opts");
        let inner = self.inner.put_multipart_opts(location, opts).await?;
        Ok(Box::new(RecordingUpload {
            inner,
            log: Arc::clone(&self.log),
        }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        record(&self.log, "get_opts");
        let mut result = self.inner.get_opts(location, options).await?;
        let body = match std::mem::replace(
            &mut result.payload,
            GetResultPayload::Stream(futures::stream::empty().boxed()),
        ) {
            GetResultPayload::Stream(body) => body,
            GetResultPayload::File(..) => unreachable!("InMemory has no files"),
        };
        result.payload = GetResultPayload::Stream(recorded(&self.log, "get_opts body", body));
        Ok(result)
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        record(&self.log, "get_ranges");
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        record(&self.log, "delete_stream");
        recorded(
            &self.log,
            "delete_stream poll",
            self.inner.delete_stream(locations),
        )
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        record(&self.log, "list");
        recorded(&self.log, "list poll", self.inner.list(prefix))
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        record(&self.log, "list_with_offset");
        recorded(
            &self.log,
            "list_with_offset poll",
            self.inner.list_with_offset(prefix, offset),
        )
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        record(&self.log, "list_with_delimiter");
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        record(&self.log, "copy_opts");
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        record(&self.log, "rename_opts");
        self.inner.rename_opts(from, to, options).await
    }
}

#[derive(Debug)]
struct RecordingUpload {
    inner: Box<dyn MultipartUpload>,
    log: Log,
}

#[async_trait]
impl MultipartUpload for RecordingUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let log = Arc::clone(&self.log);
        let mut part = self.inner.put_part(data);
        futures::future::poll_fn(move |cx| {
            record(&log, "put_part poll");
            part.poll_unpin(cx)
        })
        .boxed()
    }

    async fn complete(&mut self) -> Result<PutResult> {
        record(&self.log, "complete");
        self.inner.complete().await
    }

    async fn abort(&mut self) -> Result<()> {
        record(&self.log, "abort");
        self.inner.abort().await
    }
}

/// Everything the wrapped store must have seen: every method of the trait, the polls of
/// each kind of stream it returns, and the upload's work.
const EXPECTED: [&str; 17] = [
    "abort",
    "complete",
    "copy_opts",
    "delete_stream",
    "delete_stream poll",
    "get_opts",
    "get_opts body",
    "get_ranges",
    "list",
    "list poll",
    "list_with_delimiter",
    "list_with_offset",
    "list_with_offset poll",
    "put_multipart_opts",
    "put_opts",
    "put_part poll",
    "rename_opts",
];

/// Runs the pass over every method with `call` (which drives it from some context) and
/// checks that each thing the wrapped store did ran on a thread named `io_thread`.
fn check(
    context: &'static str,
    store: fn(Recording) -> IoStore<Recording>,
    io_thread: &'static str,
    call: fn(Arc<dyn ObjectStore>),
) {
    let log = Log::default();
    let wrapped: Arc<dyn ObjectStore> = Arc::new(store(Recording {
        inner: InMemory::new(),
        log: Arc::clone(&log),
    }));
    watchdog(context, WATCHDOG, move || call(wrapped));
    let log = log.lock().unwrap();
    let elsewhere: Vec<_> = log
        .iter()
        .filter(|(_, thread, _)| thread != io_thread)
        .collect();
    assert!(
        elsewhere.is_empty(),
        "{context}: ran off the I/O runtime ({io_thread}): {elsewhere:?}"
    );
    let seen: BTreeSet<&str> = log.iter().map(|(what, _, _)| *what).collect();
    let missing: Vec<_> = EXPECTED
        .iter()
        .filter(|what| !seen.contains(*what))
        .collect();
    assert!(
        missing.is_empty(),
        "{context}: the wrapped store never saw {missing:?}"
    );
}

#[test]
fn calls_from_a_current_thread_runtime_run_on_the_io_runtime() {
    check("current-thread task", IoStore::new, "bridge-io", |store| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            tokio::spawn(every_method(store, Kind::Memory, Mode::Async, "ct".into())).await
        })
        .unwrap();
    });
}

#[test]
fn calls_from_a_cpu_side_task_run_on_the_io_runtime() {
    check("spawn_future", IoStore::new, "bridge-io", |store| {
        bridge_rayon::spawn_future(every_method(store, Kind::Memory, Mode::Async, "cpu".into()))
            .wait();
    });
}

#[test]
fn calls_from_sync_code_run_on_the_io_runtime() {
    check("sync", IoStore::new, "bridge-io", |store| {
        bridge_core::block_on(every_method(store, Kind::Memory, Mode::Sync, "sync".into()));
    });
}

#[test]
fn a_given_runtime_runs_the_calls() {
    static CUSTOM: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    fn on_custom(store: Recording) -> IoStore<Recording> {
        let rt = CUSTOM.get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("custom-io")
                .enable_all()
                .build()
                .unwrap()
        });
        IoStore::with_runtime(
            store,
            bridge_tokio::IoRuntime::from_handle(rt.handle().clone()),
        )
    }
    check("with_runtime", on_custom, "custom-io", |store| {
        bridge_rayon::spawn_future(every_method(
            store,
            Kind::Memory,
            Mode::Async,
            "custom".into(),
        ))
        .wait();
    });
}

#[test]
fn a_call_from_a_task_of_the_io_runtime_runs_in_that_task() {
    use object_store::ObjectStoreExt;
    watchdog("in the I/O runtime's own task", WATCHDOG, || {
        let log = Log::default();
        let store = Arc::new(IoStore::new(Recording {
            inner: InMemory::new(),
            log: Arc::clone(&log),
        }));
        let path = Path::from("here");

        // A task of the shared IoRuntime: each method runs in it, with no task of its own.
        let caller = bridge_tokio::spawn_io({
            let (store, path) = (Arc::clone(&store), path.clone());
            async move {
                store
                    .put(&path, PutPayload::from_static(b"1"))
                    .await
                    .unwrap();
                store.head(&path).await.unwrap();
                tokio::task::id()
            }
        })
        .wait();
        assert_eq!(tasks_of(&log, "put_opts"), [Some(caller)]);
        assert_eq!(tasks_of(&log, "get_opts"), [Some(caller)]);

        // A task of another runtime: each method is a task of the I/O runtime, not the
        // caller's.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let caller = rt
            .block_on(async {
                let store = Arc::clone(&store);
                tokio::spawn(async move {
                    store
                        .put(&path, PutPayload::from_static(b"2"))
                        .await
                        .unwrap();
                    tokio::task::id()
                })
                .await
            })
            .unwrap();
        let puts = tasks_of(&log, "put_opts");
        assert_eq!(puts.len(), 2);
        assert!(
            puts[1].is_some_and(|task| task != caller),
            "ran in {:?}, the caller is {caller:?}",
            puts[1]
        );
        assert!(
            log.lock()
                .unwrap()
                .iter()
                .all(|(_, thread, _)| thread == "bridge-io")
        );
    });
}
