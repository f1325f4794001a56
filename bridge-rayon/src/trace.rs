//! Feature `tracing`: the span current where a task is spawned is current while its closure
//! runs, on the pool thread or inline in the waiter that claimed the job.

use crate::CancelFlag;

/// `f`, entering the span current here (at the spawn) around its run. The span is captured
/// once, at the spawn; the closure enters it wherever it runs, and leaves it on return or
/// unwind.
pub(crate) fn in_current_span<F, T>(f: F) -> impl FnOnce(CancelFlag<'_>) -> T + Send + 'static
where
    F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
{
    let span = tracing::Span::current();
    move |flag: CancelFlag<'_>| span.in_scope(|| f(flag))
}
