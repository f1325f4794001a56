//! What the suites share: the three stores (object_store's `InMemory`, `LocalFileSystem` in
//! a scratch directory, `HttpStore` on a loopback server), one pass over every method of the
//! trait with its results checked, and a watchdog.

#![allow(dead_code)] // each suite uses part of it

pub mod http;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    Error, GetOptions, GetResultPayload, ObjectStore, ObjectStoreExt, PutMode, PutOptions,
    PutPayload,
};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// How long any one check may take before the test fails as a stall.
pub const WATCHDOG: Duration = Duration::from_secs(20);

/// Runs `f` on a thread of its own and fails the test if it takes longer than `limit`
/// (the thread is then left behind: the test has failed).
#[track_caller]
pub fn watchdog<T: Send + 'static>(
    what: &str,
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    let worker = std::thread::Builder::new()
        .name(format!("watched {what}"))
        .spawn(move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
            let _ = tx.send(outcome);
        })
        .expect("a watched thread");
    match rx.recv_timeout(limit) {
        Ok(Ok(value)) => {
            worker.join().expect("the watched thread");
            value
        }
        Ok(Err(payload)) => std::panic::resume_unwind(payload),
        Err(_) => panic!("{what} stalled: not done after {limit:?}"),
    }
}

/// A scratch directory under the system's temp dir, removed when dropped.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "bridge-object-store-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let dir = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Which store, and what it supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Memory,
    Local,
    Http,
}

pub const KINDS: [Kind; 3] = [Kind::Memory, Kind::Local, Kind::Http];

/// A store of `kind` and what keeps it alive (the scratch directory, the server).
pub struct Backend {
    pub kind: Kind,
    pub store: Arc<dyn ObjectStore>,
    _dir: Option<TempDir>,
    _server: Option<http::Server>,
}

impl Backend {
    /// A fresh store of `kind`, unwrapped.
    pub fn new(kind: Kind) -> Self {
        let (store, dir, server): (Arc<dyn ObjectStore>, _, _) = match kind {
            Kind::Memory => (Arc::new(InMemory::new()), None, None),
            Kind::Local => {
                let dir = TempDir::new();
                let store = LocalFileSystem::new_with_prefix(&dir.0).expect("a LocalFileSystem");
                (Arc::new(store), Some(dir), None)
            }
            Kind::Http => {
                let server = http::Server::start();
                (Arc::new(server.store()), None, Some(server))
            }
        };
        Self {
            kind,
            store,
            _dir: dir,
            _server: server,
        }
    }
}

/// How the pass waits: `.await` in the calling task, or synchronous calls in its place
/// (`bridge::run_blocking` for each request, `bridge::iter_blocking` for each stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Async,
    Sync,
}

async fn wait<F>(mode: Mode, future: F) -> F::Output
where
    F: Future + Send,
    F::Output: Send,
{
    match mode {
        Mode::Async => future.await,
        Mode::Sync => bridge_tokio::run_blocking(future),
    }
}

async fn items<T: Send>(mode: Mode, stream: BoxStream<'_, T>) -> Vec<T> {
    match mode {
        Mode::Async => stream.collect().await,
        Mode::Sync => bridge_tokio::iter_blocking(stream).collect(),
    }
}

async fn sorted_locations(
    mode: Mode,
    stream: BoxStream<'_, object_store::Result<object_store::ObjectMeta>>,
) -> Vec<String> {
    let mut names: Vec<String> = items(mode, stream)
        .await
        .into_iter()
        .map(|meta| meta.expect("a listing entry").location.to_string())
        .collect();
    names.sort();
    names
}

fn payload(text: &'static str) -> PutPayload {
    PutPayload::from_static(text.as_bytes())
}

/// Every method of the trait (and of `ObjectStoreExt`, which calls them) once on `store`
/// under `prefix`, each result checked, waiting as `mode` says. `kind` says what the
/// wrapped store supports: the HTTP store has no multipart upload and no conditional put,
/// and its errors for those must pass through as they are.
pub async fn every_method(store: Arc<dyn ObjectStore>, kind: Kind, mode: Mode, prefix: String) {
    let p = |name: &str| Path::from(format!("{prefix}/{name}"));
    let (a, b, c, d, e, m) = (p("a"), p("b"), p("c"), p("d"), p("dir/e"), p("m"));

    // put_opts, put (ext)
    wait(
        mode,
        store.put_opts(&a, payload("hello world"), PutOptions::default()),
    )
    .await
    .expect("put_opts");
    wait(mode, store.put(&b, payload("bee")))
        .await
        .expect("put");
    wait(mode, store.put(&e, payload("eee")))
        .await
        .expect("put under dir");
    let create = PutOptions {
        mode: PutMode::Create,
        ..Default::default()
    };
    match wait(mode, store.put_opts(&a, payload("again"), create)).await {
        Err(Error::AlreadyExists { .. }) if kind != Kind::Http => {}
        Err(Error::NotImplemented { .. }) if kind == Kind::Http => {}
        other => panic!("put_opts(Create) over an object ({kind:?}): {other:?}"),
    }

    // get_opts and its body, read as a stream
    let result = wait(mode, store.get_opts(&a, GetOptions::default()))
        .await
        .expect("get_opts");
    assert_eq!(result.meta.size, 11);
    assert!(
        matches!(result.payload, GetResultPayload::Stream(_)),
        "a body crosses as a stream"
    );
    let chunks = items(mode, result.into_stream()).await;
    let body: Vec<u8> = chunks
        .into_iter()
        .flat_map(|chunk| chunk.expect("a chunk").to_vec())
        .collect();
    assert_eq!(body, b"hello world");
    // get (ext) and bytes()
    let got = wait(mode, async { store.get(&b).await?.bytes().await })
        .await
        .expect("get");
    assert_eq!(got.as_ref(), b"bee");
    // get_range, get_ranges, head (ext over get_opts)
    let range = wait(mode, store.get_range(&a, 0..5))
        .await
        .expect("get_range");
    assert_eq!(range.as_ref(), b"hello");
    let ranges = wait(mode, store.get_ranges(&a, &[0..5, 6..11]))
        .await
        .expect("get_ranges");
    assert_eq!(
        ranges,
        [Bytes::from_static(b"hello"), Bytes::from_static(b"world")]
    );
    let meta = wait(mode, store.head(&a)).await.expect("head");
    assert_eq!((meta.location.clone(), meta.size), (a.clone(), 11));
    let missing = wait(mode, store.head(&p("missing"))).await;
    assert!(
        matches!(missing, Err(Error::NotFound { .. })),
        "NotFound passes through: {missing:?}"
    );

    // copy_opts (copy, copy_if_not_exists), rename_opts (rename, rename_if_not_exists)
    wait(mode, store.copy(&a, &c)).await.expect("copy");
    let exists = wait(mode, store.copy_if_not_exists(&a, &c)).await;
    assert!(
        matches!(exists, Err(Error::AlreadyExists { .. })),
        "copy_if_not_exists: {exists:?}"
    );
    wait(mode, store.rename(&c, &d)).await.expect("rename");
    let exists = wait(mode, store.rename_if_not_exists(&d, &b)).await;
    assert!(
        matches!(exists, Err(Error::AlreadyExists { .. })),
        "rename_if_not_exists: {exists:?}"
    );
    let renamed = wait(mode, store.get_range(&d, 6..11))
        .await
        .expect("the renamed object");
    assert_eq!(renamed.as_ref(), b"world");
    assert!(
        matches!(
            wait(mode, store.head(&c)).await,
            Err(Error::NotFound { .. })
        ),
        "renamed away"
    );

    // put_multipart_opts (put_multipart) and the upload's put_part, complete, abort
    match wait(mode, store.put_multipart(&m)).await {
        Ok(mut upload) => {
            assert_ne!(kind, Kind::Http);
            let first = upload.put_part(payload("ab"));
            let second = upload.put_part(payload("cd"));
            wait(mode, futures::future::try_join(first, second))
                .await
                .expect("put_part");
            wait(mode, upload.complete()).await.expect("complete");
            let whole = wait(mode, async { store.get(&m).await?.bytes().await })
                .await
                .expect("the upload");
            assert_eq!(whole.as_ref(), b"abcd");
            let mut aborted = wait(mode, store.put_multipart(&p("aborted")))
                .await
                .expect("put_multipart");
            wait(mode, aborted.put_part(payload("zz")))
                .await
                .expect("put_part");
            wait(mode, aborted.abort()).await.expect("abort");
            assert!(matches!(
                wait(mode, store.head(&p("aborted"))).await,
                Err(Error::NotFound { .. })
            ));
        }
        Err(Error::NotImplemented { .. }) if kind == Kind::Http => {}
        Err(other) => panic!("put_multipart ({kind:?}): {other}"),
    }
    let uploaded: &[&str] = if kind == Kind::Http { &[] } else { &["m"] };

    // list, list_with_offset, list_with_delimiter
    let root = Path::from(prefix.as_str());
    let names = |list: &[&str]| -> Vec<String> {
        let mut all: Vec<String> = list
            .iter()
            .chain(uploaded)
            .map(|n| format!("{prefix}/{n}"))
            .collect();
        all.sort();
        all
    };
    assert_eq!(
        sorted_locations(mode, store.list(Some(&root))).await,
        names(&["a", "b", "d", "dir/e"])
    );
    assert_eq!(
        sorted_locations(mode, store.list_with_offset(Some(&root), &b)).await,
        names(&["d", "dir/e"])
            .into_iter()
            .filter(|n| n.as_str() > b.as_ref())
            .collect::<Vec<_>>()
    );
    let listing = wait(mode, store.list_with_delimiter(Some(&root)))
        .await
        .expect("list_with_delimiter");
    let mut objects: Vec<String> = listing
        .objects
        .iter()
        .map(|o| o.location.to_string())
        .collect();
    objects.sort();
    assert_eq!(objects, names(&["a", "b", "d"]));
    assert_eq!(listing.common_prefixes, [p("dir")]);

    // delete_stream (delete, and a stream of two)
    wait(mode, store.delete(&b)).await.expect("delete");
    assert!(
        matches!(
            wait(mode, store.head(&b)).await,
            Err(Error::NotFound { .. })
        ),
        "deleted"
    );
    let locations = futures::stream::iter([Ok(a.clone()), Ok(d.clone())]).boxed();
    let mut deleted: Vec<String> = items(mode, store.delete_stream(locations))
        .await
        .into_iter()
        .map(|path| path.expect("deleted").to_string())
        .collect();
    deleted.sort();
    assert_eq!(deleted, [a.to_string(), d.to_string()]);
    assert_eq!(
        sorted_locations(mode, store.list(Some(&root))).await,
        names(&["dir/e"])
    );
}
