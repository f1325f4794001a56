//! Feature `tracing`: the span current where a task is spawned is current while its closure
//! runs, on the pool thread or inline in the waiter that claimed the job.

use crate::CancelFlag;

/// `f`, entering the span current here (at the spawn) around its run. The span is captured
/// once, at the spawn; the closure enters it wherever it runs, and leaves it on return or
/// unwind.
///
/// With no span to carry, nothing is entered. A program that never installed a subscriber
/// can have no current span, and one relaxed load (`has_been_set`) says so: the spawn then
/// skips `Span::current()`'s dispatcher lookup, which every spawn would otherwise pay for a
/// span that cannot exist.
pub(crate) fn in_current_span<F, T>(f: F) -> impl FnOnce(CancelFlag<'_>) -> T + Send + 'static
where
    F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
{
    let span = tracing::dispatcher::has_been_set()
        .then(tracing::Span::current)
        .filter(|span| !span.is_disabled());
    move |flag: CancelFlag<'_>| match span {
        Some(span) => span.in_scope(|| f(flag)),
        None => f(flag),
    }
}
