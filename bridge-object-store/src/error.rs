//! The errors IoStore makes itself: a method whose task on the I/O runtime did not finish,
//! a stream whose producer panicked or was lost. The wrapped store's errors pass through.

use bridge_core::Error;
use std::any::Any;
use std::fmt;

/// The `store` of every error IoStore makes.
pub(crate) const STORE: &str = "IoStore";

/// Why a call or a stream of an IoStore did not finish on the I/O runtime.
#[derive(Debug)]
struct NotFinished {
    method: &'static str,
    cause: String,
}

impl fmt::Display for NotFinished {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} did not finish on the I/O runtime: {}",
            self.method, self.cause
        )
    }
}

impl std::error::Error for NotFinished {}

fn generic(method: &'static str, cause: String) -> object_store::Error {
    object_store::Error::Generic {
        store: STORE,
        source: Box::new(NotFinished { method, cause }),
    }
}

/// `method`'s task ended without an output: the wrapped store panicked, or the I/O runtime
/// shut down first.
pub(crate) fn not_finished(method: &'static str, error: &Error) -> object_store::Error {
    generic(method, error.to_string())
}

/// `method`, polled in the caller's task on the I/O runtime, panicked with `payload`: the
/// same error as when its own task panics.
pub(crate) fn panicked(method: &'static str, payload: &(dyn Any + Send)) -> object_store::Error {
    let cause = match message(payload) {
        Some(message) => format!("the work panicked: {message}"),
        None => "the work panicked".to_string(),
    };
    generic(method, cause)
}

/// A panic's message, when its payload is a string.
fn message(payload: &(dyn Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

/// A stream of `method` ended by a panic of its poll on the I/O runtime, or by the loss of
/// its producer.
pub(crate) fn stream_ended(method: &'static str, error: &Error) -> object_store::Error {
    generic(method, format!("the stream ended early: {error}"))
}

/// A call on a multipart upload whose earlier `complete` or `abort` did not finish, which
/// dropped the upload.
pub(crate) fn upload_gone(method: &'static str) -> object_store::Error {
    generic(
        method,
        "the upload was dropped when an earlier complete or abort did not finish".to_string(),
    )
}
