//! Errors through an `IoStore`: the wrapped store's pass through unchanged; a panic of the
//! wrapped store (in a method, in a stream's poll, in an upload) and the loss of the I/O
//! runtime become `object_store::Error::Generic` with store "IoStore" and a message that
//! names the method and the cause, and the I/O runtime goes on serving other calls.
#![cfg(not(bridge_loom))]

mod common;

use async_trait::async_trait;
use bridge_object_store::IoStore;
use common::{WATCHDOG, watchdog};
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    CopyOptions, Error, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
    UploadPart,
};
use std::fmt;

/// The `Generic` error's message, or a failure if `result` is anything else.
#[track_caller]
fn generic<T: fmt::Debug>(result: Result<T>) -> String {
    match result {
        Err(Error::Generic { store, source }) => {
            assert_eq!(store, "IoStore");
            source.to_string()
        }
        other => panic!("expected a Generic error of IoStore, got {other:?}"),
    }
}

#[test]
fn the_wrapped_stores_errors_pass_through() {
    watchdog("pass-through", WATCHDOG, || {
        let store = IoStore::new(InMemory::new());
        let missing = Path::from("missing");
        assert!(matches!(
            bridge_tokio::run_blocking(store.get(&missing)),
            Err(Error::NotFound { .. })
        ));
        assert!(matches!(
            bridge_tokio::run_blocking(store.head(&missing)),
            Err(Error::NotFound { .. })
        ));
        assert!(matches!(
            bridge_tokio::run_blocking(store.get_range(&missing, 0..1)),
            Err(Error::NotFound { .. })
        ));
        assert!(matches!(
            bridge_tokio::run_blocking(store.copy(&missing, &Path::from("x"))),
            Err(Error::NotFound { .. })
        ));
        let put =
            bridge_tokio::run_blocking(store.put(&Path::from("x"), PutPayload::from_static(b"1")));
        assert!(put.is_ok());
        let again = PutOptions {
            mode: object_store::PutMode::Create,
            ..Default::default()
        };
        let again = bridge_tokio::run_blocking(store.put_opts(
            &Path::from("x"),
            PutPayload::from_static(b"2"),
            again,
        ));
        assert!(
            matches!(again, Err(Error::AlreadyExists { .. })),
            "{again:?}"
        );
    });
}

/// A store whose every method panics (its streams panic at their first poll, its upload's
/// `complete` and parts panic).
#[derive(Debug)]
struct Panicking;

impl fmt::Display for Panicking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Panicking")
    }
}

fn panicking_stream<T: Send + 'static>() -> BoxStream<'static, Result<T>> {
    futures::stream::poll_fn(|_| -> std::task::Poll<Option<Result<T>>> { panic!("a torn listing") })
        .boxed()
}

#[async_trait]
impl ObjectStore for Panicking {
    async fn put_opts(&self, _: &Path, _: PutPayload, _: PutOptions) -> Result<PutResult> {
        panic!("a broken put")
    }
    async fn put_multipart_opts(
        &self,
        _: &Path,
        _: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        Ok(Box::new(PanickingUpload))
    }
    async fn get_opts(&self, _: &Path, _: GetOptions) -> Result<GetResult> {
        panic!("a broken get")
    }
    fn delete_stream(
        &self,
        _: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        panicking_stream()
    }
    fn list(&self, _: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        panicking_stream()
    }
    async fn list_with_delimiter(&self, _: Option<&Path>) -> Result<ListResult> {
        panic!("a broken listing")
    }
    async fn copy_opts(&self, _: &Path, _: &Path, _: CopyOptions) -> Result<()> {
        panic!("a broken copy")
    }
}

#[derive(Debug)]
struct PanickingUpload;

#[async_trait]
impl MultipartUpload for PanickingUpload {
    fn put_part(&mut self, _: PutPayload) -> UploadPart {
        Box::pin(async { panic!("a broken part") })
    }
    async fn complete(&mut self) -> Result<PutResult> {
        panic!("a broken complete")
    }
    async fn abort(&mut self) -> Result<()> {
        Ok(())
    }
}

#[test]
fn a_panic_of_the_wrapped_store_is_a_generic_error() {
    watchdog("panics", WATCHDOG, || {
        let store = IoStore::new(Panicking);
        let path = Path::from("p");
        let message = generic(bridge_tokio::run_blocking(
            store.put(&path, PutPayload::from_static(b"1")),
        ));
        assert!(
            message.contains("put_opts") && message.contains("a broken put"),
            "{message}"
        );
        let message = generic(bridge_tokio::run_blocking(store.get(&path)));
        assert!(
            message.contains("get_opts") && message.contains("a broken get"),
            "{message}"
        );
        let message = generic(bridge_tokio::run_blocking(store.head(&path)));
        assert!(message.contains("get_opts"), "{message}");
        let message = generic(bridge_tokio::run_blocking(store.list_with_delimiter(None)));
        assert!(message.contains("list_with_delimiter"), "{message}");
        let message = generic(bridge_tokio::run_blocking(store.copy(&path, &path)));
        assert!(message.contains("copy_opts"), "{message}");
        // rename_opts, the trait's default on the wrapped store: its copy panics.
        let message = generic(bridge_tokio::run_blocking(store.rename(&path, &path)));
        assert!(
            message.contains("rename_opts") && message.contains("a broken copy"),
            "{message}"
        );

        // A stream's panic ends it with one error item.
        let listed: Vec<_> = bridge_tokio::iter_blocking(store.list(None)).collect();
        assert_eq!(listed.len(), 1);
        let message = generic(listed.into_iter().next().unwrap());
        assert!(
            message.contains("list") && message.contains("a torn listing"),
            "{message}"
        );
        let message = generic(bridge_tokio::run_blocking(store.delete(&path)));
        assert!(message.contains("delete_stream"), "{message}");

        // The upload: a part's panic, then complete's, which drops the upload.
        let mut upload =
            bridge_tokio::run_blocking(store.put_multipart(&path)).expect("put_multipart");
        let message = generic(bridge_tokio::run_blocking(
            upload.put_part(PutPayload::from_static(b"1")),
        ));
        assert!(
            message.contains("put_part") && message.contains("a broken part"),
            "{message}"
        );
        let message = generic(bridge_tokio::run_blocking(upload.complete()));
        assert!(
            message.contains("complete") && message.contains("a broken complete"),
            "{message}"
        );
        let message = generic(bridge_tokio::run_blocking(upload.abort()));
        assert!(
            message.contains("abort") && message.contains("dropped"),
            "{message}"
        );

        // The I/O runtime is still there.
        let fine = IoStore::new(InMemory::new());
        bridge_tokio::run_blocking(fine.put(&path, PutPayload::from_static(b"ok")))
            .expect("a put after the panics");
    });
}

#[test]
fn a_panic_in_a_task_of_the_io_runtime_is_the_same_generic_error() {
    watchdog("panics in place", WATCHDOG, || {
        // Called from a task of the I/O runtime, the method runs in that task: its panic is
        // caught there too, and the task goes on.
        let message = bridge_tokio::spawn_io(async {
            let store = IoStore::new(Panicking);
            let put = store
                .put(&Path::from("p"), PutPayload::from_static(b"1"))
                .await;
            let after = store.head(&Path::from("p")).await;
            (generic(put), generic(after))
        })
        .wait();
        assert!(
            message.0.contains("put_opts") && message.0.contains("a broken put"),
            "{}",
            message.0
        );
        assert!(message.1.contains("get_opts"), "{}", message.1);
    });
}

#[test]
fn a_lost_runtime_is_a_generic_error() {
    watchdog("lost runtime", WATCHDOG, || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let store = IoStore::with_runtime(
            InMemory::new(),
            bridge_tokio::IoRuntime::from_handle(rt.handle().clone()),
        );
        let path = Path::from("p");
        bridge_tokio::run_blocking(store.put(&path, PutPayload::from_static(b"1")))
            .expect("a put while it runs");
        drop(rt);
        let message = generic(bridge_tokio::run_blocking(store.get(&path)));
        assert!(
            message.contains("get_opts") && message.contains("shut down"),
            "{message}"
        );
        let message = generic(bridge_tokio::run_blocking(
            store.put(&path, PutPayload::from_static(b"2")),
        ));
        assert!(message.contains("put_opts"), "{message}");
        let listed: Vec<_> = bridge_tokio::iter_blocking(store.list(None)).collect();
        assert_eq!(listed.len(), 1, "one error item");
        let message = generic(listed.into_iter().next().unwrap());
        assert!(
            message.contains("list") && message.contains("shut down"),
            "{message}"
        );
    });
}
