//! [`IoStore`]: the wrapper, and its `ObjectStore` implementation, one forwarding method per
//! method of the trait.

use crate::deferred::Deferred;
use crate::error::{not_finished, panicked};
use crate::upload::IoUpload;
use async_trait::async_trait;
use bridge_tokio::IoRuntime;
use bytes::Bytes;
use futures_core::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
};
use std::fmt;
use std::future::Future;
use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::task::Poll;

/// How far an `IoStore`'s streams read ahead of their consumer unless
/// [`IoStore::with_bound`] says otherwise: enough to keep a connection's receive window
/// drained while the consumer decodes a chunk (HTTP bodies arrive in chunks of a few KiB to
/// 16 KiB, `LocalFileSystem` reads 8 KiB), and little enough memory per open body that
/// thousands of them may be in flight.
const DEFAULT_BOUND: usize = 16;

/// An [`ObjectStore`] that runs every method of the store it wraps on an [`IoRuntime`]
/// (the shared one, or one given), whoever calls it and from wherever: a CPU-side task
/// (`bridge::cpu::spawn_future`), a rayon job, synchronous code (`bridge::run_blocking`,
/// `bridge::iter_blocking`), a task of a current-thread or multi-thread runtime.
///
/// - Each `async` method of the trait runs as a task of the I/O runtime (`IoRuntime::spawn`);
///   the caller awaits its output on any executor. So do the provided methods that stores
///   override (`get_ranges`, `list_with_offset`, `rename_opts`), and with them every method
///   of `ObjectStoreExt` (`get`, `get_range`, `head`, `put`, `delete`, `copy`, `rename` ...),
///   which call those. Called from a task of that I/O runtime itself, a method runs right in
///   the calling task: it is on the I/O side already, and a second task would only add a
///   wake-up.
/// - Each stream the trait returns (`list`, `list_with_offset`, `delete_stream`) is made and
///   polled on the I/O runtime, and a body (`GetResult`'s payload) is polled there too: their
///   items reach the consumer through a bounded buffer (`bridge::stream::Crossing`), at most
///   [`bound`](Self::bound) of them read ahead. A body always comes back as
///   `GetResultPayload::Stream`, a file too (read in chunks on the I/O runtime's blocking
///   threads). Dropping a stream cancels it on the I/O side.
/// - A multipart upload (`put_multipart_opts`) comes back wrapped the same way: its
///   `put_part` uploads and its `complete` and `abort` run on the I/O runtime.
///
/// Dropping a method's future before it finishes cancels the request on the I/O runtime.
///
/// # Errors
///
/// The wrapped store's errors pass through unchanged. A call whose task did not finish
/// (the wrapped store panicked, or the I/O runtime shut down first) returns
/// [`object_store::Error::Generic`] with store `"IoStore"` and a message that names the
/// method and the cause. A panic in a stream's poll ends that stream with such an error item.
///
/// # Examples
///
/// ```
/// use bridge::object_store::IoStore;
/// use object_store::{ObjectStoreExt, PutPayload, memory::InMemory, path::Path};
///
/// let store = IoStore::new(InMemory::new());
/// let path = Path::from("logs/a");
/// // Synchronous code: the requests run on the I/O runtime while this thread waits.
/// bridge::run_blocking(store.put(&path, PutPayload::from_static(b"hello")))?;
/// let body = bridge::run_blocking(async { store.get(&path).await?.bytes().await })?;
/// assert_eq!(body.as_ref(), b"hello");
/// # Ok::<(), object_store::Error>(())
/// ```
pub struct IoStore<S> {
    inner: Arc<S>,
    io: IoRuntime,
    bound: usize,
}

impl<S: ObjectStore> IoStore<S> {
    /// Wraps `store`: its methods run on the shared I/O runtime (`IoRuntime::global`).
    ///
    /// # Panics
    ///
    /// If the shared I/O runtime cannot be built on first use (its threads cannot be
    /// started), as `IoRuntime::global` does.
    ///
    /// # Examples
    ///
    /// ```
    /// use object_store::{ObjectStore, memory::InMemory};
    ///
    /// let store: std::sync::Arc<dyn ObjectStore> = std::sync::Arc::new(bridge::object_store::IoStore::new(InMemory::new()));
    /// assert_eq!(store.to_string(), "IoStore(InMemory)");
    /// ```
    #[track_caller]
    pub fn new(store: S) -> Self {
        Self::with_runtime(store, IoRuntime::global().clone())
    }

    /// Wraps `store`: its methods run on `io`, an I/O runtime of your own.
    ///
    /// The store does not keep `io` alive beyond its own life; if that runtime shuts down,
    /// calls return `object_store::Error::Generic` (store `"IoStore"`).
    ///
    /// # Examples
    ///
    /// ```
    /// use bridge::object_store::IoStore;
    /// use object_store::{ObjectStoreExt, memory::InMemory, path::Path};
    ///
    /// let io = bridge::rt::IoRuntime::new(1).unwrap();
    /// let store = IoStore::with_runtime(InMemory::new(), io);
    /// let missing = bridge::run_blocking(store.head(&Path::from("nothing")));
    /// assert!(matches!(missing, Err(object_store::Error::NotFound { .. })));
    /// ```
    pub fn with_runtime(store: S, io: IoRuntime) -> Self {
        Self::from_arc(Arc::new(store), io)
    }

    /// Wraps a store shared with other owners: its methods run on `io`.
    ///
    /// # Examples
    ///
    /// ```
    /// use bridge::object_store::IoStore;
    /// use std::sync::Arc;
    ///
    /// let shared = Arc::new(object_store::memory::InMemory::new());
    /// let store = IoStore::from_arc(Arc::clone(&shared), bridge::rt::IoRuntime::global().clone());
    /// assert!(Arc::ptr_eq(store.inner(), &shared));
    /// ```
    pub fn from_arc(store: Arc<S>, io: IoRuntime) -> Self {
        Self {
            inner: store,
            io,
            bound: DEFAULT_BOUND,
        }
    }

    /// The same store whose streams may be read `bound` items ahead of their consumer
    /// (16 unless set: enough to keep a connection's receive window drained while the
    /// consumer decodes a chunk, little memory per open body). 0: a stream makes an item only
    /// while its consumer waits for it.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = bridge::object_store::IoStore::new(object_store::memory::InMemory::new()).with_bound(64);
    /// assert_eq!(store.bound(), 64);
    /// ```
    #[must_use]
    pub fn with_bound(mut self, bound: usize) -> Self {
        self.bound = bound;
        self
    }

    /// How many items a stream of this store may be read ahead of its consumer.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = bridge::object_store::IoStore::new(object_store::memory::InMemory::new());
    /// assert_eq!(store.bound(), 16);
    /// ```
    pub fn bound(&self) -> usize {
        self.bound
    }

    /// The I/O runtime the store's methods run on.
    ///
    /// # Examples
    ///
    /// ```
    /// let io = bridge::rt::IoRuntime::new(1).unwrap();
    /// let store = bridge::object_store::IoStore::with_runtime(object_store::memory::InMemory::new(), io.clone());
    /// assert_eq!(store.io().handle().id(), io.handle().id());
    /// ```
    pub fn io(&self) -> &IoRuntime {
        &self.io
    }

    /// The wrapped store.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = bridge::object_store::IoStore::new(object_store::memory::InMemory::new());
    /// assert_eq!(store.inner().to_string(), "InMemory");
    /// ```
    pub fn inner(&self) -> &Arc<S> {
        &self.inner
    }

    /// The wrapped store. Calls still in flight keep their own reference to it.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = bridge::object_store::IoStore::new(object_store::memory::InMemory::new());
    /// let inner: std::sync::Arc<object_store::memory::InMemory> = store.into_inner();
    /// assert_eq!(inner.to_string(), "InMemory");
    /// ```
    pub fn into_inner(self) -> Arc<S> {
        self.inner
    }

    /// Runs `future` (a method of the wrapped store) as a task of the I/O runtime and
    /// awaits its output; a task that did not finish becomes a `Generic` error.
    ///
    /// Called from a task of the I/O runtime itself (on one of its workers), the future is
    /// polled right in that task instead: it is where the spawned task would run, and the
    /// request then costs no second task and no wake-up between the two. A panic there is
    /// the same `Generic` error.
    async fn run<T, F>(&self, method: &'static str, future: F) -> Result<T>
    where
        F: Future<Output = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        if on_worker_of(&self.io) {
            let mut future = std::pin::pin!(future);
            let polled = std::future::poll_fn(|cx| {
                match panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
                    Ok(poll) => poll.map(Ok),
                    Err(payload) => Poll::Ready(Err(payload)),
                }
            });
            return match polled.await {
                Ok(output) => output,
                Err(payload) => Err(panicked(method, &*payload)),
            };
        }
        match self.io.spawn(future).catch_unwind().await {
            Ok(output) => output,
            Err(error) => Err(not_finished(method, &error)),
        }
    }

    /// A stream of the wrapped store, made by `make` on the I/O runtime at its first poll
    /// and polled there, crossing to the caller through the bounded buffer.
    fn stream<T, M>(&self, method: &'static str, make: M) -> BoxStream<'static, Result<T>>
    where
        M: FnOnce(&S) -> BoxStream<'static, Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        let store = Arc::clone(&self.inner);
        let deferred = Deferred::new(method, move || make(&store));
        Box::pin(crate::deferred::ended_by_errors(
            method,
            self.io.spawn_stream(deferred, self.bound),
        ))
    }
}

impl<S> Clone for IoStore<S> {
    /// Another handle on the same store, runtime and bound.
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            io: self.io.clone(),
            bound: self.bound,
        }
    }
}

impl<S: fmt::Display> fmt::Display for IoStore<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IoStore({})", self.inner)
    }
}

impl<S: fmt::Debug> fmt::Debug for IoStore<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IoStore")
            .field("inner", &self.inner)
            .field("io", &self.io)
            .field("bound", &self.bound)
            .finish()
    }
}

/// Whether the caller is a task on one of `io`'s workers (its handle current, and a worker
/// thread, not a thread that merely entered the handle, as the CPU side does).
fn on_worker_of(io: &IoRuntime) -> bool {
    tokio::runtime::worker_index().is_some()
        && tokio::runtime::Handle::try_current()
            .is_ok_and(|current| current.id() == io.handle().id())
}

/// The body of `result`, polled on the I/O runtime (this runs there) and read through a
/// crossing; the rest of the result as it was.
fn cross_body(io: &IoRuntime, bound: usize, mut result: GetResult) -> GetResult {
    // `into_stream` turns a file into chunked reads; it needs the whole result, so the body
    // is taken out first and put into a result of its own.
    let payload = std::mem::replace(
        &mut result.payload,
        GetResultPayload::Stream(Box::pin(crate::deferred::Empty)),
    );
    let body = GetResult {
        payload,
        meta: result.meta.clone(),
        range: result.range.clone(),
        attributes: Default::default(),
        extensions: Default::default(),
    }
    .into_stream();
    let crossing = crate::deferred::ended_by_errors("get_opts", io.spawn_stream(body, bound));
    result.payload = GetResultPayload::Stream(Box::pin(crossing));
    result
}

// Every method of the trait, the provided ones too (clippy checks that none is left to its
// default, which would run the store's own default on top of IoStore's other methods and
// never reach an override of the wrapped store).
#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<S: ObjectStore> ObjectStore for IoStore<S> {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let (store, location) = (Arc::clone(&self.inner), location.clone());
        self.run("put_opts", async move {
            store.put_opts(&location, payload, opts).await
        })
        .await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        let (store, location) = (Arc::clone(&self.inner), location.clone());
        let upload = self
            .run("put_multipart_opts", async move {
                store.put_multipart_opts(&location, opts).await
            })
            .await?;
        Ok(Box::new(IoUpload::new(upload, self.io.clone())))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let (store, location) = (Arc::clone(&self.inner), location.clone());
        let (io, bound) = (self.io.clone(), self.bound);
        self.run("get_opts", async move {
            let result = store.get_opts(&location, options).await?;
            Ok(cross_body(&io, bound, result))
        })
        .await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let (store, location) = (Arc::clone(&self.inner), location.clone());
        let ranges = ranges.to_vec();
        self.run("get_ranges", async move {
            store.get_ranges(&location, &ranges).await
        })
        .await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.stream("delete_stream", move |store| store.delete_stream(locations))
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let prefix = prefix.cloned();
        self.stream("list", move |store| store.list(prefix.as_ref()))
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        let (prefix, offset) = (prefix.cloned(), offset.clone());
        self.stream("list_with_offset", move |store| {
            store.list_with_offset(prefix.as_ref(), &offset)
        })
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let (store, prefix) = (Arc::clone(&self.inner), prefix.cloned());
        self.run("list_with_delimiter", async move {
            store.list_with_delimiter(prefix.as_ref()).await
        })
        .await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        let (store, from, to) = (Arc::clone(&self.inner), from.clone(), to.clone());
        self.run("copy_opts", async move {
            store.copy_opts(&from, &to, options).await
        })
        .await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        let (store, from, to) = (Arc::clone(&self.inner), from.clone(), to.clone());
        self.run("rename_opts", async move {
            store.rename_opts(&from, &to, options).await
        })
        .await
    }
}
