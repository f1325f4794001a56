//! [`IoUpload`]: the multipart upload of an IoStore, whose parts, `complete` and `abort` run
//! on the I/O runtime.

use crate::error::{not_finished, upload_gone};
use async_trait::async_trait;
use bridge_tokio::IoRuntime;
use object_store::{MultipartUpload, PutPayload, PutResult, Result, UploadPart};
use std::fmt;

/// The wrapped store's upload, and the runtime its work runs on.
///
/// `complete` and `abort` take `&mut self` across their `.await`, which a task of the I/O
/// runtime cannot borrow: the upload is moved into the task and back. If that task does not
/// finish (the store panicked, the runtime shut down, or the caller dropped the future of
/// `complete` or `abort` before it finished, which cancels the task), the upload is dropped
/// with it, as dropping the upload would, and later calls return a `Generic` error.
pub(crate) struct IoUpload {
    inner: Option<Box<dyn MultipartUpload>>,
    io: IoRuntime,
}

impl IoUpload {
    pub(crate) fn new(inner: Box<dyn MultipartUpload>, io: IoRuntime) -> Self {
        Self {
            inner: Some(inner),
            io,
        }
    }

    /// Runs `method` of the wrapped upload as a task of the I/O runtime, the upload moved
    /// into the task and back.
    async fn run<T, F>(&mut self, method: &'static str, call: F) -> Result<T>
    where
        F: for<'a> FnOnce(
                &'a mut dyn MultipartUpload,
            ) -> futures_core::future::BoxFuture<'a, Result<T>>
            + Send
            + 'static,
        T: Send + 'static,
    {
        let Some(mut upload) = self.inner.take() else {
            return Err(upload_gone(method));
        };
        let task = self.io.spawn(async move {
            let output = call(upload.as_mut()).await;
            (upload, output)
        });
        match task.catch_unwind().await {
            Ok((upload, output)) => {
                self.inner = Some(upload);
                output
            }
            Err(error) => Err(not_finished(method, &error)),
        }
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl MultipartUpload for IoUpload {
    /// Numbers the part on the caller's thread, as the wrapped upload's `put_part` does
    /// when called (so parts keep the order of the calls), with the I/O runtime entered (so
    /// anything that call spawns runs there); the returned future, which uploads the part,
    /// runs as a task of the I/O runtime.
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let Some(upload) = self.inner.as_mut() else {
            return Box::pin(std::future::ready(Err(upload_gone("put_part"))));
        };
        let part = {
            let _entered = self.io.handle().enter();
            upload.put_part(data)
        };
        let task = self.io.spawn(part).catch_unwind();
        Box::pin(async move {
            match task.await {
                Ok(output) => output,
                Err(error) => Err(not_finished("put_part", &error)),
            }
        })
    }

    async fn complete(&mut self) -> Result<PutResult> {
        self.run("complete", |upload| upload.complete()).await
    }

    async fn abort(&mut self) -> Result<()> {
        self.run("abort", |upload| upload.abort()).await
    }
}

impl fmt::Debug for IoUpload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IoUpload")
            .field("inner", &self.inner)
            .field("io", &self.io)
            .finish()
    }
}
